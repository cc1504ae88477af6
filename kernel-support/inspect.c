/* sentinel-inspect - look at a Linux kernel through its RAM, as Sentinel does.
 *
 * This is how an admin checks that Sentinel sees their kernel correctly
 * before trusting rules on it: the same discovery and translation code the
 * detector uses, printing what it finds. */
#include "kbtf.h"
#include "ktarget.h"
#include "kwalk.h"
#include "msrc.h"

#include <bpf/btf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
"  tasks              the task list (a ps from RAM): PID PPID STATE COMM\n"
"  read PATH...       print a kernel variable, typed from the kernel's BTF:\n"
"                       jiffies_64   init_task.comm   avenrun[0]\n"
"                       runqueues.nr_switches   (per-CPU: each CPU and the sum)\n"
"                       SYMBOL:TYPE.field       (name a type BTF does not give)\n"
"  sym NAME...        print symbol addresses\n"
"  xlate ADDR...      translate kernel virtual addresses (hex) to physical\n"
"  kallsyms           print the symbol table in /proc/kallsyms format\n"
"  btf FILE           save the kernel's BTF (raw) to FILE\n"
"\n"
"Sources (--source, or $SENTINEL_SOURCE):\n"
"  ramfile:PATH[,split=auto|none|BYTES]  a QEMU guest's RAM file (share=on)\n"
"  vmcore:PATH        an ELF core (QEMU dump-guest-memory, kdump)\n"
"  raw:PATH           a raw physical memory image\n"
"  pmem[:DEVICE]      this host's RAM through /dev/sentinel_pmem\n"
"\n"
"Options:\n"
"  -s, --source SPEC  the memory source (see above)\n"
"      --kallsyms FILE  symbols from a /proc/kallsyms copy instead of memory\n"
"      --btf FILE     types from a BTF file (/sys/kernel/btf/vmlinux) instead of memory\n"
"      --cpu N        per-CPU reads: only CPU N\n"
"      --sum          per-CPU reads: print only the sum over possible CPUs\n"
"  -v, --value        print values only (for scripts)\n"
"  -h, --help         this help\n"
"\n"
"Exit status: 0 ok, 1 a read failed, 2 usage error or no kernel found.\n"
"Docs: docs/targets.md\n", out);
}

static const char *levels_name(const KTarget *t)
{
	return t->mem.levels == 5 ? "5-level (LA57)" : "4-level";
}

static int cmd_info(const KTarget *t, const MemSource *s, double secs)
{
	printf("kernel:          Linux %s\n", t->release);
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
	printf("symbols:         %zu from %s\n", t->nsyms, t->sym_origin);
	printf("types:           BTF from %s%s\n", t->btf_origin, t->btf_size ? "" : "");
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

static int cmd_tasks(const KTarget *t, bool value)
{
	KwTaskLayout L;
	char err[256];
	if (kw_task_layout(t->btf, &L, err, sizeof err)) {
		fprintf(stderr, "sentinel-inspect: %s\n", err);
		return 2;
	}
	uint64_t init;
	if (kt_sym(t, "init_task", &init)) {
		fprintf(stderr, "sentinel-inspect: the kernel has no init_task symbol\n");
		return 2;
	}
	if (!value)
		printf("%7s %7s %s %s\n", "PID", "PPID", "S", "COMM");
	kx_list_iter it;
	kx_list_begin(&it, init + L.tasks, KW_MAX_TASKS);
	uint64_t node;
	int r, n = 0, rc = 0;
	KwTask tk;
	/* init_task itself (the idle task, PID 0) is the list head: /proc does not show it */
	while ((r = kx_list_next(&t->mem, &it, &node)) > 0) {
		if (kw_task_read(&t->mem, &L, node - L.tasks, &tk)) {
			printf("%7s %7s ? <read error at 0x%llx>\n", "?", "?", (unsigned long long)(node - L.tasks));
			rc = 1;
			continue;
		}
		printf("%7d %7d %c %s\n", tk.pid, tk.ppid, tk.state, tk.comm);
		n++;
	}
	if (r < 0) {
		fprintf(stderr, "sentinel-inspect: the task list broke after %d tasks: %s\n", n,
			r == KX_ELOOP ? "corrupt, cyclic or changing under us (try again)" : strerror(-r));
		return 1;
	}
	return rc;
}

static int run(const char *source, const KtOptions *ko, const char *cmd, int argc, char **argv,
	       int cpu, bool sum, bool value)
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
		rc = cmd_tasks(t, value);
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
	char **pos = calloc((size_t)argc + 1, sizeof *pos);   /* operands, in order */
	if (!pos)
		return 2;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || !a[1]) {
			pos[npos++] = argv[i];
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			rc = 0;
			goto out;
		} else if ((!strcmp(a, "-s") || !strcmp(a, "--source")) && i + 1 < argc) {
			source = argv[++i];
		} else if (!strncmp(a, "--source=", 9)) {
			source = a + 9;
		} else if (!strcmp(a, "--kallsyms") && i + 1 < argc) {
			ko.kallsyms_file = argv[++i];
		} else if (!strcmp(a, "--btf") && i + 1 < argc) {
			ko.btf_file = argv[++i];
		} else if (!strcmp(a, "--cpu") && i + 1 < argc) {
			cpu = atoi(argv[++i]);
		} else if (!strcmp(a, "--sum")) {
			sum = true;
		} else if (!strcmp(a, "-v") || !strcmp(a, "--value")) {
			value = true;
		} else {
			fprintf(stderr, "sentinel-inspect: unknown option '%s'; see --help\n", a);
			goto out;
		}
	}
	if (!npos) {
		fprintf(stderr, "sentinel-inspect: no command; try 'sentinel-inspect --source ramfile:PATH info' or --help\n");
	} else if (strcmp(pos[0], "info") && strcmp(pos[0], "read") && strcmp(pos[0], "tasks") && strcmp(pos[0], "sym") &&
		   strcmp(pos[0], "xlate") && strcmp(pos[0], "kallsyms") && strcmp(pos[0], "btf")) {
		fprintf(stderr, "sentinel-inspect: unknown command '%s'; the commands are info, tasks, read, sym, "
				"xlate, kallsyms, btf\n", pos[0]);
	} else if (!source) {
		fprintf(stderr, "sentinel-inspect: no memory source; give --source ramfile:PATH (a VM), "
				"vmcore:PATH (a dump) or pmem (this host)\n");
	} else {
		rc = run(source, &ko, pos[0], npos - 1, pos + 1, cpu, sum, value);
	}
out:
	free(pos);
	return rc;
}
