// PASS: core
// KENUM, KSIZEOF, KFIELD_EXISTS and KTYPE_EXISTS are relocations too; a
// field guarded by KFIELD_EXISTS, a flavoured struct and a weak symbol are
// optional (the metric still runs where they are missing).
#include "kcore.h"

struct rq___new {
	int newfield;
};

extern unsigned long maybe_missing __kweak;

long km_markers(struct rq *r)
{
	long v = KENUM(cpu_usage_stat, CPUTIME_IDLE) + (long)KSIZEOF(rq);
	if (KFIELD_EXISTS(rq, newfield))
		v += KR(((struct rq___new *)r)->newfield);
	if (KTYPE_EXISTS(mm_rss_stat))
		v++;
	if (&maybe_missing)
		v += (long)maybe_missing;
	return v;
}
// CHECK-LABEL: define{{.*}} i64 @km_markers
// CHECK-NOT: __sentinel.
// CHECK-DAG: ; relocation [[E:[0-9]+]]: enumerator CPUTIME_IDLE of enum cpu_usage_stat
// CHECK-DAG: ; relocation [[S:[0-9]+]]: the size of struct rq
// CHECK-DAG: ; relocation [[X:[0-9]+]]: whether rq.newfield exists
// CHECK-DAG: ; relocation [[T:[0-9]+]]: whether struct mm_rss_stat exists
// CHECK-DAG: ; relocation [[F:[0-9]+]]: field rq___new.newfield
// CHECK-DAG: ; relocation [[W:[0-9]+]]: kernel symbol maybe_missing (weak)
// CHECK-DAG: ; km_markers needs relocation [[E]]{{$}}
// CHECK-DAG: ; km_markers needs relocation [[S]]{{$}}
// CHECK-DAG: ; km_markers needs relocation [[F]] (optional)
// CHECK-DAG: ; km_markers needs relocation [[W]] (optional)
