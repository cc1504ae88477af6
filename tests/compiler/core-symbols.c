// PASS: core,llview
// A kernel symbol's address comes from the relocation table, also where
// clang folded it into a constant expression (avenrun[1]); the loads
// through it are then kernel loads.
#include "kcore.h"

double km_load5(void)
{
	return (double)avenrun[1] / 2048.0;
}
// CHECK-LABEL: define{{.*}} double @km_load5
// CHECK: %[[A:relo[0-9]*]] = load i64, ptr {{.*}}@__sentinel_relo
// CHECK: %[[P:.*]] = inttoptr i64 %[[A]] to ptr
// CHECK: getelementptr inbounds {{.*}}ptr %[[P]]
// CHECK: call i64 @__llview_load(
// CHECK-NOT: @avenrun
// CHECK: ; relocation 0: kernel symbol avenrun
