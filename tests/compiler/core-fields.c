// PASS: core
// Field accesses through KR() become offsets loaded from the relocation
// table; the relocation names the struct and field as BTF does, and the
// local field's size is recorded for the loader's check.
#include "kcore.h"

struct thing {
	int a;
	long b;
	struct list_head link;
};

long km_field(struct thing *t)
{
	return KR(t->b) + (long)KR(t->link.prev);
}
// CHECK-LABEL: define{{.*}} i64 @km_field
// CHECK-NOT: llvm.preserve
// CHECK: %[[OFF:relo[0-9]*]] = load i64, ptr {{.*}}@__sentinel_relo{{.*}}!invariant.load
// CHECK: getelementptr i8, ptr %{{.*}}, i64 %[[OFF]]
// CHECK-DAG: ; relocation {{[0-9]+}}: field thing.b
// CHECK-DAG: ; relocation {{[0-9]+}}: field thing.link
// CHECK-DAG: ; relocation {{[0-9]+}}: field list_head.prev
// CHECK-DAG: ; km_field needs relocation
