/* sentinel-inspect - look at a Linux kernel through its RAM, as Sentinel does.
 *
 * This is how an admin checks that Sentinel sees their kernel correctly
 * before trusting rules on it: the same discovery and translation code the
 * detector uses, printing what it finds. */
#include "compile.h"
#include "engine.h"
#include "kbtf.h"
#include "klog.h"
#include "ktarget.h"
#include "msrc.h"
#include "record.h"
#include "reloc.h"
#include "units.h"
#include "util.h"

#include <bpf/btf.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *out)
{
	fputs(
"Usage: sentinel-inspect --source SOURCE [OPTION]... COMMAND [ARG]...\n"
"\n"
"Find the Linux kernel in a memory source, with no other input, and read it.\n"
"\n"
"Commands:\n"
"  info               kernel release, KASLR slide, paging mode, CPUs, RAM,\n"
"                     where symbols and types came from\n"
"  tasks              a ps from RAM: PID PPID STATE COMM, read as the rules\n"
"                     read tasks (the metric library, one tick; --bundle,\n"
"                     --tasks and --threads as for metrics)\n"
"  read PATH...       print a kernel variable, typed from the kernel's BTF:\n"
"                       jiffies_64   init_task.comm   avenrun[0]\n"
"                       runqueues.nr_switches   (per-CPU: each CPU and the sum)\n"
"                       SYMBOL:TYPE.field       (name a type BTF does not give)\n"
"  sym NAME...        print symbol addresses\n"
"  xlate ADDR...      translate kernel virtual addresses (hex) to physical\n"
"  kallsyms           print the symbol table in /proc/kallsyms format\n"
"  btf FILE           save the kernel's BTF (raw) to FILE\n"
"  metrics            every catalog metric, computed by the compiled metric\n"
"                     library (the detector's own code) on the CPU or the GPU\n"
"  dmesg              the kernel's log, from its printk ring (-n, -f, --kmsg)\n"
"  relocs [TEXT]...   the metric library's relocations against this kernel's\n"
"                     BTF (fields, types, sizes, symbols), each resolved or\n"
"                     why not; only those naming TEXT (e.g. ___in_igb: a\n"
"                     driver's types, read from its module's BTF); exit 1\n"
"                     when one listed does not resolve or names what this\n"
"                     kernel lacks (--bundle as for metrics)\n"
"\n"
"Sources (--source, or $SENTINEL_SOURCE):\n"
"  ramfile:PATH[,split=auto|none|BYTES]  a QEMU guest's RAM file (share=on)\n"
"  vmcore:PATH        an ELF core (QEMU dump-guest-memory, kdump)\n"
"  raw:PATH           a raw physical memory image\n"
"  pmem[:DEVICE]      this host's RAM through /dev/sentinel_pmem (the\n"
"                     sentinel_pmem module: make module-install)\n"
"  kcore[:PATH]       this host's RAM through /proc/kcore: root, no module;\n"
"                     slower (read a page at a time), CPU backend only\n"
"  qemu:PID           a running QEMU's guest RAM, found in its memory map\n"
"                     (root: /proc/PID/map_files; a shared memfd or file)\n"
"  libvirt:DOMAIN     the same for a libvirt domain (<access mode='shared'/>)\n"
"\n"
"Options:\n"
"  -s, --source SPEC  the memory source (see above)\n"
"      --kallsyms FILE  symbols from a /proc/kallsyms copy instead of memory\n"
"      --btf FILE     types from a BTF file (/sys/kernel/btf/vmlinux) instead of memory\n"
"      --cpu N        per-CPU reads: only CPU N\n"
"      --sum          per-CPU reads: print only the sum over possible CPUs\n"
"  -v, --value        print values only (for scripts)\n"
"metrics options:\n"
"      --every DURATION repeat every DURATION (e.g. 500ms) until --count\n"
"      --count N        print N times (default 1; with --every, forever)\n"
"      --json           one JSON object per sample\n"
"      --backend B      cpu, cuda or auto (default cpu)\n"
"      --bundle FILE    run a bundle made by rulec --all-metrics -o FILE\n"
"                       (default: compile one now, about a second)\n"
"      --tasks N        the task table's size (default 4096): more tasks\n"
"                       than this are a read error (tasks: a start, grown\n"
"                       to what the target has)\n"
"      --threads N      the CPU backend's threads for a tick (default 1)\n"
"      --record FILE    write every tick's values to FILE instead of printing\n"
"                       them (replay: rulec test --replay FILE RULES...);\n"
"                       with --every (the tick, default 100ms), until --count\n"
"                       or Ctrl-C\n"
"dmesg options:\n"
"  -n, --lines N      only the last N lines\n"
"  -f, --follow       keep printing new records (poll every --every, 200ms)\n"
"      --kmsg         /dev/kmsg format: PRIORITY,SEQUENCE,MICROSECONDS,FLAG;TEXT\n"
"  -h, --help         this help\n"
"\n"
"Exit status: 0 ok, 1 a read failed, 2 usage error or no kernel found.\n"
"Docs: docs/targets.md\n", out);
}

static const char *levels_name(const KTarget *t)
{
	return t->mem.levels == 5 ? "5-level (LA57)" : "4-level";
}

/* A string read from kernel memory (len bytes at most), printable: a
 * corrupt or hostile kernel's names may hold any byte (u_printable). */
typedef struct { char s[4 * SN_OBJ_NAME + 1]; } KText;
static const char *ktext(KText *b, const char *s, size_t len)
{
	u_printable(b->s, sizeof b->s, s, len, "");
	return b->s;
}

static int cmd_info(const KTarget *t, const MemSource *s, double secs)
{
	KText kt;
	printf("kernel:          Linux %s\n", ktext(&kt, t->release, sizeof t->release));
	printf("source:          %s %s, %llu MiB in %u range%s\n", ms_kind_name(s->kind), s->path,
	       ms_total(s) >> 20, s->nranges, s->nranges == 1 ? "" : "s");
	printf("KASLR:           %s, virtual offset 0x%llx\n", t->kaslr < 0 ? "unknown" : t->kaslr ? "on" : "off",
	       (unsigned long long)t->kaslr_offset);
	printf("phys_base:       0x%llx\n", (unsigned long long)t->mem.phys_base);
	printf("page_offset_base:0x%llx\n", (unsigned long long)t->mem.page_offset_base);
	printf("paging:          %s, init_top_pgt at phys 0x%llx\n", levels_name(t), (unsigned long long)t->mem.pgd);
	printf("kernel image:    %llu MiB mapped at 0x%llx\n", (unsigned long long)(t->mem.image_size >> 20),
	       (unsigned long long)KX_START_KERNEL_MAP);
	printf("CPUs:            %u online, %u possible ids\n", kt_online_cpus(t), t->cpus.nr_cpu_ids);
	printf("symbols:         %zu from %s%s\n", t->nsyms, t->sym_origin,
	       t->sym_slid ? " (link addresses, moved by the KASLR slide)" : "");
	printf("types:           BTF from %s%s\n", t->btf_origin, t->btf_size ? "" : "");
	if (t->nmod) {
		printf("module types:    BTF of %zu loaded module%s:", t->nmod, t->nmod == 1 ? "" : "s");
		for (size_t i = 0; i < t->nmod; i++)
			printf(" %s", ktext(&kt, t->mod_name[i], sizeof t->mod_name[i]));
		putchar('\n');
	}
	printf("VMCOREINFO:      phys 0x%llx\n", (unsigned long long)t->vmcoreinfo_pa);
	printf("discovery:       %.1f ms\n", secs * 1e3);
	return 0;
}

static int cmd_read(const KTarget *t, int argc, char **argv, int cpu, bool sum, bool value)
{
	int rc = 0;
	for (int i = 0; i < argc; i++) {
		KbPlace p;
		char err[256];
		if (kb_resolve(t, argv[i], &p, err, sizeof err)) {
			fprintf(stderr, "sentinel-inspect: %s: %s\n", argv[i], err);
			rc = 1;
			continue;
		}
		if (!p.percpu) {
			if (!value)
				printf("%s = ", argv[i]);
			if (kb_print(t, &p, 0, stdout, 0)) {
				printf("<read error>");
				rc = 1;
			}
			putchar('\n');
			continue;
		}
		bool isint = kb_is_int(t, &p);
		if ((sum || value) && !isint) {
			fprintf(stderr, "sentinel-inspect: %s: --sum needs an integer\n", argv[i]);
			rc = 1;
			continue;
		}
		int64_t total = 0;
		for (uint32_t c = 0; c < t->cpus.nr_cpu_ids; c++) {
			if (!kx_cpu_possible(&t->cpus, c) || (cpu >= 0 && (uint32_t)cpu != c))
				continue;
			int64_t v;
			if (isint) {
				if (kb_read_int(t, &p, c, &v)) {
					fprintf(stderr, "sentinel-inspect: %s: read error on CPU %u\n", argv[i], c);
					rc = 1;
					continue;
				}
				total += v;
			}
			if (sum || (value && cpu < 0))
				continue;
			if (!value)
				printf("%s[cpu%u] = ", argv[i], c);
			if (kb_print(t, &p, c, stdout, 0))
				printf("<read error>");
			putchar('\n');
		}
		if (isint && cpu < 0) {
			if (!value)
				printf("%s[sum] = ", argv[i]);
			printf("%lld\n", (long long)total);
		}
	}
	return rc;
}

/* ---- metrics: the compiled metric library, run by the engine ---------------------------- */

typedef struct MetricsOpts {
	const char *bundle, *backend;
	const char *record;       /* --record FILE: every tick's values (engine/record.h), nothing printed */
	double every;
	long count;
	uint32_t tasks;           /* --tasks N: the task table (default WD_DEFAULT_TASKS) */
	uint32_t threads;         /* --threads N: the CPU backend's tick threads (default 1) */
	bool json;
} MetricsOpts;

static void fmt_value(const Metric *m, double v, char *buf, size_t n)
{
	union { double d; uint64_t u; } bits = {.d = v};
	if (isnan(v) && bits.u == SN_ABSENT_BITS)
		snprintf(buf, n, "<unknown>");     /* not here (lo's speed, a bond's slaves on lo) */
	else if (isnan(v))
		snprintf(buf, n, "<read error>");
	else if (m->type == MT_STATE)
		snprintf(buf, n, "%c", (char)v);
	else if (m->type == MT_BOOL)
		snprintf(buf, n, "%s", v != 0 ? "yes" : "no");
	else if (m->unit == MU_SECONDS)
		snprintf(buf, n, "%.3f s", v);
	else if (m->unit == MU_BYTES)
		snprintf(buf, n, "%.0f KiB", v / 1024);
	else if (m->unit == MU_LOAD)
		snprintf(buf, n, "%.2f", v);
	else if (m->unit == MU_BYTES_PER_SECOND)
		snprintf(buf, n, "%.0f Mb/s", v * 8 / 1e6);
	else
		snprintf(buf, n, "%.0f", v);
}

/* This process, when it reads the machine it runs on: its memory and
 * threads are in the numbers (the guest tests allow for them). */
static json_t *inspect_self(void)
{
	struct rusage ru;
	long threads = 0;
	char line[128];
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "Threads:", 8))
			threads = strtol(line + 8, NULL, 10);
	if (f)
		fclose(f);
	getrusage(RUSAGE_SELF, &ru);
	return json_pack("{s:i, s:I, s:I}", "pid", (int)getpid(), "max_rss_kb", (json_int_t)ru.ru_maxrss,
			 "threads", (json_int_t)threads);
}

/* The string metric that names an object of entity e ("disk.name",
 * "fs.mountpoint"): the key of its name in the JSON. */
static const char *obj_name_metric(Entity e)
{
	for (unsigned m = 0; m < MET__COUNT; m++)
		if (cat_metrics[m].entity == e && cat_metrics[m].type == MT_STR && cat_obj_str(m) == SN_STR_NAME)
			return cat_metrics[m].name;
	return "name";
}

/* An object's labels besides its name (a mount's fs.fstype, fs.device):
 * the string metrics of entity e that are not its name, the next from
 * metric *m on (MET__COUNT: no more); obj_label: one's text, in kt. */
static MetricId obj_label_next(Entity e, unsigned *m)
{
	for (; *m < MET__COUNT; ++*m)
		if (cat_metrics[*m].entity == e && cat_metrics[*m].type == MT_STR && cat_obj_str(*m) != SN_STR_NAME)
			return (MetricId)(*m)++;
	return MET__COUNT;
}

static const char *obj_label(KText *kt, const sn_objs *O, MetricId m, uint32_t s)
{
	uint32_t size = 0;
	const char *v = sn_objs_str(O, cat_obj_str(m), s, &size);
	return v ? ktext(kt, v, size) : "";
}

static json_t *json_value(const Metric *m, double v)
{
	if (isnan(v))
		return json_null();
	if (m->type == MT_STATE) {
		char s[2] = {(char)v, 0};
		return json_string(s);
	}
	if (m->type == MT_BOOL)
		return json_boolean(v != 0);
	if (isinf(v))                       /* JSON has no infinity: a limit of "max" */
		return json_string(v > 0 ? "+Inf" : "-Inf");
	return json_real(v);
}

static void print_metrics(const Bundle *b, const sn_world *w, const Engine *e, const MemSource *src,
			  const MetricsOpts *o, long sample, double open_ms, double tick_us)
{
	const RlResult *res = eng_relocs(e);
	char buf[64];
	KText kt;
	if (o->json) {
		json_t *j = json_object(), *host = json_object(), *cpus = json_array(), *tasks = json_array();
		json_object_set_new(j, "sample", json_integer(sample));
		json_object_set_new(j, "backend", json_string(eng_backend(e) == ENG_CUDA ? "cuda" : "cpu"));
		json_object_set_new(j, "backend_note", json_string(eng_backend_note(e)));
		json_object_set_new(j, "open_ms", json_real(open_ms));
		json_object_set_new(j, "tick_us", json_real(tick_us));
		for (unsigned i = 0; i < b->nhost; i++)
			json_object_set_new(host, cat_metrics[b->host_m[i]].name, json_value(&cat_metrics[b->host_m[i]], w->host[i]));
		json_object_set_new(j, "host", host);
		for (uint32_t c = 0; c < w->ncpus; c++) {
			json_t *o2 = json_pack("{s:i, s:b}", "cpu", (int)c, "online", w->cpu_on[c] != 0);
			for (unsigned i = 0; i < b->ncpu; i++)
				json_object_set_new(o2, cat_metrics[b->cpu_m[i]].name,
						    json_value(&cat_metrics[b->cpu_m[i]], w->cpu[(size_t)i * w->max_cpus + c]));
			json_array_append_new(cpus, o2);
		}
		json_object_set_new(j, "cpus", cpus);
		for (uint32_t r = 0; r < w->tasks.n; r++) {
			json_t *o2 = json_object();
			for (unsigned i = 0; i < b->ntask; i++)
				json_object_set_new(o2, cat_metrics[b->task_m[i]].name,
						    json_value(&cat_metrics[b->task_m[i]], w->tasks.val[(size_t)i * w->tasks.cap + r]));
			if (b->comm)
				json_object_set_new(o2, "task.comm", json_string(ktext(&kt, w->tasks.comm[r], 16)));
			json_array_append_new(tasks, o2);
		}
		json_object_set_new(j, "tasks", tasks);
		json_object_set_new(j, "task_source", json_string(w->tasks.by_list ? "task list" : "pid tree"));
		for (unsigned k = 0; k < ENT_NOBJ; k++) {       /* "disks": [{"disk.name": "vda", ...}] */
			const sn_objs *O = &w->objs[k];
			if (!O->cap)
				continue;
			json_t *objs = json_array();
			for (uint32_t s = 0; s < O->hi; s++) {
				if (!O->on[s])
					continue;
				json_t *o2 = json_pack("{s:s}", obj_name_metric(ENT_FIRST_OBJ + k),
						       ktext(&kt, O->name[s], SN_OBJ_NAME));
				for (unsigned at = 0, m; (m = obj_label_next(ENT_FIRST_OBJ + k, &at)) < MET__COUNT;)
					json_object_set_new(o2, cat_metrics[m].name, json_string(obj_label(&kt, O, m, s)));
				for (unsigned i = 0; i < b->nobj[k]; i++)
					json_object_set_new(o2, cat_metrics[b->obj_m[k][i]].name,
							    json_value(&cat_metrics[b->obj_m[k][i]], O->val[(size_t)i * O->cap + s]));
				json_array_append_new(objs, o2);
			}
			json_object_set_new(j, cat_entities[ENT_FIRST_OBJ + k].plural, objs);
			if (O->err) {
				char key[48];
				snprintf(key, sizeof key, "%s_walk_error", cat_entities[ENT_FIRST_OBJ + k].prefix);
				json_object_set_new(j, key, json_integer(O->err));
			}
		}
		if (w->tasks.err)
			json_object_set_new(j, "task_walk_error", json_integer(w->tasks.err));
		json_t *un = json_object();
		for (int m = 0; m < MET__COUNT; m++)
			if (!res->avail[m])
				json_object_set_new(un, cat_metrics[m].name, json_string(res->reason[m]));
		json_object_set_new(j, "unavailable", un);
		if (src->kind == MS_KCORE || (src->kind == MS_PMEM && src->pmem_device))
			json_object_set_new(j, "reader", inspect_self());
		char *s = json_dumps(j, JSON_COMPACT);
		puts(s);
		free(s);
		json_decref(j);
		fflush(stdout);
		return;
	}
	if (sample)
		putchar('\n');
	for (unsigned i = 0; i < b->nhost; i++) {
		const Metric *m = &cat_metrics[b->host_m[i]];
		fmt_value(m, w->host[i], buf, sizeof buf);
		printf("%-22s %s\n", m->name, res->avail[b->host_m[i]] ? buf : "unavailable");
	}
	if (b->ncpu) {
		printf("\n%4s", "CPU");
		for (unsigned i = 0; i < b->ncpu; i++)
			printf(" %14s", cat_metrics[b->cpu_m[i]].name + 4);
		putchar('\n');
		for (uint32_t c = 0; c < w->ncpus; c++) {
			if (!w->cpu_on[c])
				continue;
			printf("%4u", c);
			for (unsigned i = 0; i < b->ncpu; i++) {
				fmt_value(&cat_metrics[b->cpu_m[i]], w->cpu[(size_t)i * w->max_cpus + c], buf, sizeof buf);
				printf(" %14s", buf);
			}
			putchar('\n');
		}
	}
	if (b->ntask) {
		printf("\n%u tasks, from the %s%s\n", w->tasks.n, w->tasks.by_list ? "task list" : "PID tree",
		       w->tasks.err ? " (the walk failed this tick)" : "");
		for (unsigned i = 0; i < b->ntask; i++)
			printf("%s%s", i ? " " : "", cat_metrics[b->task_m[i]].name + 5);
		printf("%s\n", b->comm ? " comm" : "");
		for (uint32_t r = 0; r < w->tasks.n; r++) {
			for (unsigned i = 0; i < b->ntask; i++) {
				fmt_value(&cat_metrics[b->task_m[i]], w->tasks.val[(size_t)i * w->tasks.cap + r], buf, sizeof buf);
				printf("%s%s", i ? " " : "", buf);
			}
			printf(" %s\n", b->comm ? ktext(&kt, w->tasks.comm[r], 16) : "");
		}
	}
	for (unsigned k = 0; k < ENT_NOBJ; k++) {
		const sn_objs *O = &w->objs[k];
		if (!O->cap)
			continue;
		const char *pre = cat_entities[ENT_FIRST_OBJ + k].prefix;
		printf("\n%u %s%s\n%-12s", O->found, cat_entities[ENT_FIRST_OBJ + k].plural,
		       O->err ? " (the walk failed this tick)" : "", cat_entities[ENT_FIRST_OBJ + k].label);
		for (unsigned i = 0; i < b->nobj[k]; i++)
			printf(" %s", cat_metrics[b->obj_m[k][i]].name + strlen(pre) + 1);
		for (unsigned at = 0, m; (m = obj_label_next(ENT_FIRST_OBJ + k, &at)) < MET__COUNT;)
			printf(" %s", cat_metrics[m].name + strlen(pre) + 1);
		putchar('\n');
		for (uint32_t s = 0; s < O->hi; s++) {
			if (!O->on[s])
				continue;
			printf("%-12s", ktext(&kt, O->name[s], 32));
			for (unsigned i = 0; i < b->nobj[k]; i++) {
				fmt_value(&cat_metrics[b->obj_m[k][i]], O->val[(size_t)i * O->cap + s], buf, sizeof buf);
				printf(" %s", buf);
			}
			for (unsigned at = 0, m; (m = obj_label_next(ENT_FIRST_OBJ + k, &at)) < MET__COUNT;)
				printf(" %s", obj_label(&kt, O, m, s));
			putchar('\n');
		}
	}
	for (int m = 0; m < MET__COUNT; m++)
		if (!res->avail[m])
			fprintf(stderr, "sentinel-inspect: %s\n", res->reason[m]);
	fflush(stdout);
}

/* The bundle metrics and tasks run: --bundle FILE, or every metric of
 * the catalog compiled now (the runtime's bitcode is in this program). */
static int inspect_bundle(const MetricsOpts *o, Bundle **b, char *err, size_t n)
{
	return o->bundle ? bd_read(o->bundle, b, err, n) : comp_build_all(SENTINEL_VERSION, b, err, n);
}

/* relocs: the bundle's relocations resolved against this kernel, those
 * whose description holds one of the texts (all with none).  A driver's
 * reader names its module's types TYPE___in_MODULE: `relocs ___in_igb`
 * on a kernel with igb loaded says whether it resolves, with or without
 * the device. */
static int cmd_relocs(const KTarget *t, const MetricsOpts *o, int argc, char **argv)
{
	char err[1024] = "";
	Bundle *b = NULL;
	RlResult res = {0};
	int rc = 2;
	unsigned listed = 0, bad = 0;
	if (inspect_bundle(o, &b, err, sizeof err) || rl_resolve(b, t, &res, err, sizeof err))
		goto out;
	for (size_t i = 0; i < b->relos.n; i++) {
		char d[256];
		relo_describe(&b->relos.v[i], d, sizeof d);
		int k = 0;
		while (k < argc && !strstr(d, argv[k]))
			k++;
		if (argc && k == argc)
			continue;
		listed++;
		/* a weak symbol the kernel lacks, a type or field it has not:
		 * resolved (the code tests them), but absent here */
		const Relo *x = &b->relos.v[i];
		bool absent = res.ok[i] && !res.value[i] &&
			      (x->kind == RELO_SYM || x->kind == RELO_TYPE || x->kind == RELO_EXISTS);
		if (absent) {
			printf("no   %-18s %s: not in this kernel\n", "", d);
			bad++;
		} else if (res.ok[i]) {
			printf("ok   %-#18llx %s\n", (unsigned long long)res.value[i], d);
		} else {
			printf("FAIL %-18s %s: %s\n", "", d, res.why[i] ? res.why[i] : "unresolved");
			bad++;
		}
	}
	printf("%u relocations listed, %u unresolved or absent\n", listed, bad);
	rc = bad || !listed ? 1 : 0;
	if (!listed)
		fprintf(stderr, "sentinel-inspect: no relocation names %s\n", argc ? argv[0] : "anything");
out:
	if (*err)
		fprintf(stderr, "sentinel-inspect: %s\n", err);
	rl_free(&res);
	bd_free(b);
	return rc;
}

static const double *tasks_pid;                 /* cmd_tasks' sort key (NaN last) */
static int tasks_by_pid(const void *a, const void *b)
{
	double x = tasks_pid[*(const uint32_t *)a], y = tasks_pid[*(const uint32_t *)b];
	return isnan(x) ? !isnan(y) : isnan(y) ? -1 : (x > y) - (x < y);
}

/* tasks: a ps from RAM, read as the rules read tasks: one tick of the
 * engine (CPU backend) and its task table, PID order.  A table too small
 * for the target's tasks is opened again at the size they need. */
static int cmd_tasks(const KTarget *t, const MetricsOpts *o, bool value)
{
	char err[1024] = "";
	Bundle *b = NULL;
	Engine *e = NULL;
	uint32_t *rows = NULL;
	int rc = 2;
	if (inspect_bundle(o, &b, err, sizeof err))
		goto out;
	int cpid = bd_task_col(b, MET_TASK_PID), cppid = bd_task_col(b, MET_TASK_PPID);
	int cst = bd_task_col(b, MET_TASK_STATE);
	if (cpid < 0 || cppid < 0 || cst < 0 || !b->comm) {
		snprintf(err, sizeof err, "%s does not read task.pid, task.ppid, task.state and task.comm: give a bundle "
			 "made by rulec --all-metrics, or none", o->bundle ? o->bundle : "the bundle");
		goto out;
	}
	const sn_world *w = NULL;
	for (uint32_t cap = o->tasks ? o->tasks : WD_DEFAULT_TASKS;;) {
		EngOpts eo = {.backend = "cpu", .tick_ns = 100000000ull, .task_cap = cap, .threads = o->threads};
		if (eng_open(b, t, &eo, &e, err, sizeof err) || eng_tick(e, 0, err, sizeof err) ||
		    !(w = eng_view(e, err, sizeof err)))
			goto out;
		if (w->tasks.found <= w->tasks.cap || cap >= (1u << 20))
			break;
		uint32_t want = w->tasks.found + w->tasks.found / 4;        /* room for the ones starting now */
		cap = want < (1u << 20) ? want : 1u << 20;
		eng_close(e);
		e = NULL;
	}
	rc = 1;
	if (w->tasks.err) {
		snprintf(err, sizeof err, "the task walk failed after %u tasks: %s", w->tasks.n,
			 w->tasks.err == KX_ELOOP ? "corrupt, cyclic or changing under us (try again)" : strerror(-w->tasks.err));
		goto out;
	}
	rows = malloc((w->tasks.n ? w->tasks.n : 1) * sizeof *rows);
	if (!rows) {
		snprintf(err, sizeof err, "out of memory");
		goto out;
	}
	const double *pid = w->tasks.val + (size_t)cpid * w->tasks.cap, *ppid = w->tasks.val + (size_t)cppid * w->tasks.cap,
		     *st = w->tasks.val + (size_t)cst * w->tasks.cap;
	for (uint32_t r = 0; r < w->tasks.n; r++)
		rows[r] = r;
	tasks_pid = pid;                                   /* by PID: ps's order */
	qsort(rows, w->tasks.n, sizeof *rows, tasks_by_pid);
	if (!value)
		printf("%7s %7s %s %s\n", "PID", "PPID", "S", "COMM");
	rc = 0;
	KText kt;
	for (uint32_t i = 0; i < w->tasks.n; i++) {
		uint32_t r = rows[i];
		if (isnan(pid[r])) {
			printf("%7s %7s ? <read error at 0x%llx>\n", "?", "?", (unsigned long long)w->tasks.ptr[r]);
			rc = 1;
			continue;
		}
		printf("%7.0f %7.0f %c %s\n", pid[r], isnan(ppid[r]) ? 0.0 : ppid[r], isnan(st[r]) ? '?' : (char)st[r],
		       ktext(&kt, w->tasks.comm[r], 16));
	}
	if (w->tasks.found > w->tasks.cap) {
		fprintf(stderr, "sentinel-inspect: tasks: %u of %u tasks shown (the table's most)\n", w->tasks.n,
			w->tasks.found);
		rc = 1;
	}
out:
	if (*err)
		fprintf(stderr, "sentinel-inspect: tasks: %s\n", err);
	free(rows);
	eng_close(e);
	bd_free(b);
	return rc;
}

static volatile sig_atomic_t inspect_quit;
static void inspect_on_signal(int sig) { (void)sig; inspect_quit = 1; }

static int cmd_metrics(const KTarget *t, const MetricsOpts *o)
{
	char err[1024] = "";
	Bundle *b = NULL;
	Engine *e = NULL;
	Recorder *rec = NULL;
	int rc = 2;
	if (inspect_bundle(o, &b, err, sizeof err))
		goto out;
	EngOpts eo = {.backend = o->backend ? o->backend : "cpu",
		      .tick_ns = o->every > 0 ? (uint64_t)(o->every * 1e9) : 100000000ull, .task_cap = o->tasks,
		      .threads = o->threads};
	struct timespec t0, t1, t2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (eng_open(b, t, &eo, &e, err, sizeof err))
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double open_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (!o->json && !o->record)
		printf("backend: %s\n", eng_backend_note(e));
	if (o->record && rec_create(o->record, b, eo.tick_ns, t->cpus.nr_cpu_ids, &rec, err, sizeof err))
		goto out;
	signal(SIGINT, inspect_on_signal);
	signal(SIGTERM, inspect_on_signal);
	rc = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; (o->count <= 0 || i < o->count) && !inspect_quit; i++) {
		if (i && o->every > 0) {      /* on a schedule, as the engine ticks */
			double at = (double)i * o->every;
			struct timespec ts = {t0.tv_sec + (time_t)at, t0.tv_nsec + (long)((at - (double)(time_t)at) * 1e9)};
			if (ts.tv_nsec >= 1000000000l)
				ts.tv_sec++, ts.tv_nsec -= 1000000000l;
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !inspect_quit)
				;
		}
		const sn_world *w;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (eng_tick(e, 0, err, sizeof err)) {
			rc = 1;
			goto out;
		}
		clock_gettime(CLOCK_MONOTONIC, &t2);
		if (!(w = eng_view(e, err, sizeof err))) {
			rc = 1;
			goto out;
		}
		if (rec) {
			if (rec_tick(rec, w)) {
				snprintf(err, sizeof err, "%s: cannot write the recording: %s", o->record, strerror(errno));
				rc = 1;
				goto out;
			}
			uint64_t n, bytes;
			rec_stats(rec, &n, &bytes);
			if (n % (uint64_t)(10 / o->every + 1) == 0)
				fprintf(stderr, "sentinel-inspect: recorded %llu ticks (%.1f MiB) to %s\n",
					(unsigned long long)n, (double)bytes / 1048576.0, o->record);
			continue;
		}
		print_metrics(b, w, e, t->src, o, i, open_ms,
			      (double)(t2.tv_sec - t1.tv_sec) * 1e6 + (double)(t2.tv_nsec - t1.tv_nsec) / 1e3);
	}
out:
	if (*err)
		fprintf(stderr, "sentinel-inspect: metrics: %s\n", err);
	if (rec) {
		uint64_t n, bytes;
		rec_stats(rec, &n, &bytes);
		if (rec_close(rec) && !rc)
			rc = 1;
		fprintf(stderr, "sentinel-inspect: recorded %llu ticks (%.1f MiB) to %s\n", (unsigned long long)n,
			(double)bytes / 1048576.0, o->record);
	}
	eng_close(e);
	bd_free(b);
	return rc;
}

/* ---- dmesg: the printk ring buffer ------------------------------------------------------ */

typedef struct DmesgOpts {
	long lines;          /* last N lines; < 0: all */
	bool follow, kmsg;
	double every;
} DmesgOpts;

/* Records of one read: printed at once, or (with -n) the last N kept. */
typedef struct DmesgOut {
	const DmesgOpts *o;
	char **line;         /* a ring of the last o->lines formatted lines */
	long n;              /* lines seen */
} DmesgOut;

static void dmesg_emit(const KlRecord *r, bool kmsg, FILE *f)
{
	if (kmsg)
		kl_print_kmsg(r, f);
	else
		kl_print(r, f);
}

static int dmesg_record(const KlRecord *r, void *arg)
{
	DmesgOut *d = arg;
	if (!d->line) {
		dmesg_emit(r, d->o->kmsg, stdout);
		return 0;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	dmesg_emit(r, d->o->kmsg, f);
	fclose(f);
	for (char *p = buf, *nl; p && *p; p = nl ? nl + 1 : NULL) {   /* a record may be several lines */
		nl = strchr(p, '\n');
		char **slot = &d->line[d->n++ % d->o->lines];
		free(*slot);
		*slot = strndup(p, nl ? (size_t)(nl - p) : strlen(p));
	}
	free(buf);
	return 0;
}

static int cmd_dmesg(const KTarget *t, const DmesgOpts *o)
{
	char err[512];
	KlLog *l = NULL;
	DmesgOut d = {.o = o};
	int rc = 1;
	uint64_t next = 0;
	if (kl_open(t, &l, err, sizeof err)) {
		fprintf(stderr, "sentinel-inspect: dmesg: %s\n", err);
		return 2;
	}
	if (o->lines >= 0 && !(d.line = calloc((size_t)o->lines + 1, sizeof *d.line)))
		goto out;
	/* -n 0 prints nothing now, but still finds where --follow starts */
	if (kl_read(l, 0, o->lines != 0 ? dmesg_record : NULL, &d, &next, err, sizeof err) < 0)
		goto fail;
	for (long i = d.n > o->lines ? d.n - o->lines : 0; d.line && i < d.n; i++)
		puts(d.line[i % o->lines]);
	rc = 0;
	if (o->follow) {
		signal(SIGINT, inspect_on_signal);
		signal(SIGTERM, inspect_on_signal);
		DmesgOut live = {.o = o};
		fflush(stdout);
		fprintf(stderr, "sentinel-inspect: dmesg: following from record %llu (Ctrl-C to stop)\n",
			(unsigned long long)next);
		while (!inspect_quit) {
			struct timespec ts = {(time_t)o->every, (long)((o->every - (double)(time_t)o->every) * 1e9)};
			nanosleep(&ts, NULL);
			if (!kt_unchanged(t)) {
				fprintf(stderr, "sentinel-inspect: dmesg: the kernel is gone (rebooted or its memory "
						"went away); run again to read the new one\n");
				rc = 1;
				break;
			}
			if (kl_read(l, next, dmesg_record, &live, &next, err, sizeof err) < 0)
				goto fail;
			fflush(stdout);
		}
	}
	goto out;
fail:
	fprintf(stderr, "sentinel-inspect: dmesg: %s\n", err);
	rc = 1;
out:
	for (long i = 0; d.line && i < o->lines; i++)
		free(d.line[i]);
	free(d.line);
	kl_close(l);
	return rc;
}

static int run(const char *source, const KtOptions *ko, const char *cmd, int argc, char **argv,
	       int cpu, bool sum, bool value, const MetricsOpts *mo, const DmesgOpts *dmo)
{
	char err[512];
	MemSource *s = NULL;
	KTarget *t = NULL;
	int rc = 2;
	struct timespec t0, t1;
	if (ms_open(source, &s, err, sizeof err)) {
		fprintf(stderr, "sentinel-inspect: %s\n", err);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (kt_open(s, ko, &t, err, sizeof err)) {
		fprintf(stderr, "sentinel-inspect: %s: %s\n", source, err);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!strcmp(cmd, "info")) {
		rc = cmd_info(t, s, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	} else if (!strcmp(cmd, "read")) {
		if (!argc)
			fprintf(stderr, "sentinel-inspect: read needs a PATH, e.g. jiffies_64\n");
		else
			rc = cmd_read(t, argc, argv, cpu, sum, value);
	} else if (!strcmp(cmd, "tasks")) {
		rc = cmd_tasks(t, mo, value);
	} else if (!strcmp(cmd, "metrics")) {
		rc = cmd_metrics(t, mo);
	} else if (!strcmp(cmd, "dmesg")) {
		rc = cmd_dmesg(t, dmo);
	} else if (!strcmp(cmd, "relocs")) {
		rc = cmd_relocs(t, mo, argc, argv);
	} else if (!strcmp(cmd, "kallsyms")) {
		for (size_t i = 0; i < t->nsyms; i++)
			printf("%016llx %c %s\n", (unsigned long long)t->syms[i].addr, t->syms[i].type, t->syms[i].name);
		rc = 0;
	} else if (!strcmp(cmd, "btf")) {
		uint32_t size;
		const void *raw = btf__raw_data(t->btf, &size);
		FILE *f = argc ? fopen(argv[0], "wb") : NULL;
		if (!f || !raw || fwrite(raw, 1, size, f) != size) {
			fprintf(stderr, "sentinel-inspect: btf: %s\n", argc ? strerror(errno) : "give a FILE to write");
			rc = 1;
		} else {
			printf("%u bytes of BTF written to %s\n", size, argv[0]);
			rc = 0;
		}
		if (f)
			fclose(f);
	} else if (!strcmp(cmd, "xlate")) {
		rc = 0;
		for (int i = 0; i < argc; i++) {
			char *end;
			uint64_t va = strtoull(argv[i], &end, 16), pa;
			uint64_t ptr;
			int e = *end ? KX_EINVAL : kx_translate(&t->mem, va, &pa);
			if (!e)
				e = kx_phys_ptr(&t->mem, pa, 1, &ptr);
			if (e) {
				fprintf(stderr, "sentinel-inspect: %s: %s\n", argv[i],
					e == KX_ENOENT ? "not mapped" : e == KX_EFAULT ? "outside RAM" : "not an address");
				rc = 1;
			} else {
				printf("%016llx -> phys %#llx\n", (unsigned long long)va, (unsigned long long)pa);
			}
		}
	} else {
		rc = 0;
		for (int i = 0; i < argc; i++) {
			uint64_t a;
			if (kt_sym(t, argv[i], &a)) {
				fprintf(stderr, "sentinel-inspect: no symbol '%s'\n", argv[i]);
				rc = 1;
			} else {
				printf("%016llx %s\n", (unsigned long long)a, argv[i]);
			}
		}
	}
out:
	kt_close(t);
	ms_close(s);
	return rc;
}

int main(int argc, char **argv)
{
	const char *source = getenv("SENTINEL_SOURCE");
	KtOptions ko = {0};
	int cpu = -1, npos = 0, rc = 2;
	bool sum = false, value = false;
	MetricsOpts mo = {.count = 1};
	DmesgOpts dmo = {.lines = -1};
	bool count_set = false;
	enum { O_KALLSYMS = 256, O_BTF, O_CPU, O_SUM, O_JSON, O_BUNDLE, O_RECORD, O_BACKEND, O_THREADS, O_TASKS,
	       O_COUNT, O_EVERY, O_KMSG };
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},        {"source", required_argument, NULL, 's'},
		{"kallsyms", required_argument, NULL, O_KALLSYMS}, {"btf", required_argument, NULL, O_BTF},
		{"cpu", required_argument, NULL, O_CPU},  {"sum", no_argument, NULL, O_SUM},
		{"json", no_argument, NULL, O_JSON},      {"bundle", required_argument, NULL, O_BUNDLE},
		{"record", required_argument, NULL, O_RECORD}, {"backend", required_argument, NULL, O_BACKEND},
		{"threads", required_argument, NULL, O_THREADS}, {"tasks", required_argument, NULL, O_TASKS},
		{"count", required_argument, NULL, O_COUNT}, {"every", required_argument, NULL, O_EVERY},
		{"lines", required_argument, NULL, 'n'},  {"follow", no_argument, NULL, 'f'},
		{"kmsg", no_argument, NULL, O_KMSG},      {"value", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0}};
	char *end;
	long v;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hs:n:fv", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 's':
			source = optarg;
			break;
		case O_KALLSYMS:
			ko.kallsyms_file = optarg;
			break;
		case O_BTF:
			ko.btf_file = optarg;
			break;
		case O_CPU:
			cpu = atoi(optarg);
			break;
		case O_SUM:
			sum = true;
			break;
		case O_JSON:
			mo.json = true;
			break;
		case O_BUNDLE:
			mo.bundle = optarg;
			break;
		case O_RECORD:
			mo.record = optarg;
			break;
		case O_BACKEND:
			mo.backend = optarg;
			break;
		case O_THREADS:
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 64) {
				fprintf(stderr, "sentinel-inspect: --threads takes a thread count from 1 to 64\n");
				return 2;
			}
			mo.threads = (uint32_t)v;
			break;
		case O_TASKS:
			v = strtol(optarg, &end, 10);
			if (*end || v < 16 || v > (1l << 20)) {
				fprintf(stderr, "sentinel-inspect: --tasks takes a task table size from 16 to 1048576\n");
				return 2;
			}
			mo.tasks = (uint32_t)v;
			break;
		case O_COUNT:
			mo.count = atol(optarg);
			count_set = true;
			break;
		case O_EVERY: {
			size_t bad;
			if (unit_parse_duration(optarg, strlen(optarg), &mo.every, &bad) < 0 || mo.every <= 0) {
				fprintf(stderr, "sentinel-inspect: --every takes a duration such as 500ms or 2s\n");
				return 2;
			}
			break;
		}
		case 'n':
			dmo.lines = strtol(optarg, &end, 10);
			if (*end || dmo.lines < 0) {
				fprintf(stderr, "sentinel-inspect: --lines takes a count, e.g. -n 100\n");
				return 2;
			}
			break;
		case 'f':
			dmo.follow = true;
			break;
		case O_KMSG:
			dmo.kmsg = true;
			break;
		case 'v':
			value = true;
			break;
		case ':':
			fprintf(stderr, "sentinel-inspect: %s needs a value; see --help\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "sentinel-inspect: unknown option '%s'; see --help\n", argv[optind - 1]);
			return 2;
		}
	}
	/* the operands, in order (getopt_long moved them after the options) */
	char **pos = argv + optind;
	npos = argc - optind;
	if (mo.record && mo.every <= 0)
		mo.every = 0.1;              /* recordings tick as sentineld does by default */
	dmo.every = mo.every > 0 ? mo.every : 0.2;
	if (mo.every > 0 && !count_set)
		mo.count = 0;                /* forever */
	if (!npos) {
		fprintf(stderr, "sentinel-inspect: no command; try 'sentinel-inspect --source ramfile:PATH info' or --help\n");
	} else if (strcmp(pos[0], "info") && strcmp(pos[0], "read") && strcmp(pos[0], "tasks") && strcmp(pos[0], "sym") &&
		   strcmp(pos[0], "xlate") && strcmp(pos[0], "kallsyms") && strcmp(pos[0], "btf") &&
		   strcmp(pos[0], "metrics") && strcmp(pos[0], "dmesg") && strcmp(pos[0], "relocs")) {
		fprintf(stderr, "sentinel-inspect: unknown command '%s'; the commands are info, tasks, read, sym, "
				"xlate, kallsyms, btf, metrics, dmesg, relocs\n", pos[0]);
	} else if (npos > 1 && (!strcmp(pos[0], "info") || !strcmp(pos[0], "tasks") || !strcmp(pos[0], "metrics") ||
				!strcmp(pos[0], "dmesg") || !strcmp(pos[0], "kallsyms"))) {
		/* an operand these ignore is a mistake, most often a bundle given as a file */
		fprintf(stderr, "sentinel-inspect: %s takes no operand ('%s'); a compiled bundle is --bundle FILE, "
				"see --help\n", pos[0], pos[1]);
	} else if (!source) {
		fprintf(stderr, "sentinel-inspect: no memory source; give --source ramfile:PATH (a VM), "
				"vmcore:PATH (a dump) or pmem (this host)\n");
	} else {
		rc = run(source, &ko, pos[0], npos - 1, pos + 1, cpu, sum, value, &mo, &dmo);
	}
	return rc;
}
