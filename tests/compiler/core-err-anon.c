// PASS: core
// ERROR: anonymous struct or union
// Local views declare kernel fields flat; BTF finds them through the
// kernel's anonymous members.
#include "kcore.h"

struct outer {
	struct { long hidden; };
};

long km_anon(struct outer *o)
{
	return KR(o->hidden);
}
