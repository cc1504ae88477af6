// PASS: core
// ERROR: a variable index into an array of
// A variable index steps by the local struct's size, not the kernel's.
#include "kcore.h"

struct bucket { long a, b; };
struct table { struct bucket b[8]; };

long km_bad(struct table *t, int i)
{
	return KR(t->b[i].a);
}
