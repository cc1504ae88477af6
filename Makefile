# Sentinel top-level Makefile.
#
#   make            build everything (runs ./configure first if needed)
#   make check      build, then run the test suite (ASan/UBSan build, fuzz smoke)
#   make demo       the main job (see README)
#   make install    install under $(PREFIX) (DESTDIR honoured)
#   make clean      remove build outputs;  make distclean also config.mk

.DEFAULT_GOAL := all
include config.mk

# A fresh clone has no config.mk: configure, installing missing Debian
# packages when we are root with apt-get, otherwise printing the apt line.
config.mk: configure
	@echo "make: running ./configure --install-deps=auto"
	@./configure --install-deps=auto

VERSION := 0.1.0
B := build
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
BASE_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DSENTINEL_VERSION='"$(VERSION)"' $(WARN) $(YAML_CFLAGS) $(CFLAGS_USER)
# -fPIC: the same objects go into librulec-backend.so
OPT_CFLAGS := -O2 -g -fPIC
SAN_FLAGS := -O1 -g -fPIC -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LIBS := $(YAML_LIBS) -lm

RULEC_LIB_SRC := rulec/util.c rulec/diag.c rulec/catalog.c rulec/yamlt.c rulec/units.c \
	rulec/parse.c rulec/check.c rulec/rulefile.c rulec/cg_plan.c rulec/cg_shape.c rulec/relo.c rulec/bundle.c rulec/tmpl.c \
	rulec/ruletest.c rulec/rx.c
RULEC_HDR := $(wildcard rulec/*.h rulec/*.def) kernel-support/snrt.h kernel-support/kstate.h

LIB_OBJ := $(RULEC_LIB_SRC:%.c=$(B)/obj/%.o)
SAN_OBJ := $(RULEC_LIB_SRC:%.c=$(B)/san/obj/%.o)
# linked into every sanitizer executable (why: the file's comment)
SAN_DEFAULTS := $(B)/san/obj/tests/san_defaults.o

# The kernel model: freestanding translation (kx.c, also built for NVPTX
# in the runtime library below) and the host-side discovery.
KS_FREE_SRC := kernel-support/kx.c
KS_SRC := $(KS_FREE_SRC) kernel-support/msrc.c kernel-support/ktarget.c kernel-support/ksyms.c kernel-support/kbtf.c \
	kernel-support/klog.c
KS_HDR := $(wildcard kernel-support/*.h) kernel-support/module/sentinel_pmem.h
KS_OBJ := $(KS_SRC:%.c=$(B)/obj/%.o)
KS_SAN_OBJ := $(KS_SRC:%.c=$(B)/san/obj/%.o)
KS_LIBS := $(LIBBPF_LIBS)

# The compiler back end (LLVM) and the engine's loader.
CC_SRC := rulec/lvm.c rulec/core.c rulec/llview.c rulec/cg.c rulec/compile.c rulec/compcache.c rulec/libbc.c
# The engine and the templates' rendering; the sinks (HTTP, journal,
# /metrics) apart: only sentineld links them and their libraries.
ENG_SRC := engine/reloc.c engine/world.c engine/elfload.c engine/cpu.c engine/gpu.c engine/gpumap.c engine/gpurun.c engine/gpuwake.c engine/gpufleet.c engine/gpucache.c engine/gpucap.c engine/engine.c engine/state.c engine/config.c engine/feed.c \
	engine/record.c notifier/render.c
# The remote sinks (http.h): the delivery thread, its queues, its spool, what it sends
HTTP_SRC := notifier/http.c notifier/hqueue.c notifier/spool.c notifier/payload.c
SINK_SRC := notifier/notify.c notifier/jsonl.c $(HTTP_SRC) notifier/prom.c notifier/journal.c
# sentineld (its folder): the main loop, its targets, finding their kernels, their watch, the
# reload and its trial, the control socket (sentineld/sentineld.h)
SD_SRC := sentineld/sentineld.c sentineld/klog.c sentineld/state.c sentineld/target.c sentineld/find.c sentineld/watch.c sentineld/reload.c \
	sentineld/trial.c sentineld/control.c sentineld/crash.c
CC_OBJ := $(CC_SRC:%.c=$(B)/obj/%.o)
CC_SAN_OBJ := $(CC_SRC:%.c=$(B)/san/obj/%.o)
ENG_OBJ := $(ENG_SRC:%.c=$(B)/obj/%.o)
ENG_SAN_OBJ := $(ENG_SRC:%.c=$(B)/san/obj/%.o)
SINK_OBJ := $(SINK_SRC:%.c=$(B)/obj/%.o)
SINK_SAN_OBJ := $(SINK_SRC:%.c=$(B)/san/obj/%.o)
ENG_HDR := $(wildcard engine/*.h)
ALL_LIBS := $(LIBS) $(KS_LIBS) $(JANSSON_LIBS) $(INIH_LIBS) $(LLVM_LIBS) -lpthread -ldl
# programs that load libcuda export their sysinfo() to it (engine/gpucap.c)
GPUCAP_LDFLAGS := -Wl,--dynamic-list=engine/gpucap.dynlist
SINK_LIBS := $(CURL_LIBS) $(MHD_LIBS) $(SYSTEMD_LIBS)

# The runtime library: metric library, translation runtime, evaluation
# runtime; compiled by clang to bitcode for the host and for NVPTX, built
# into rulec (rulec/libbc.c) and linked with every rule set it compiles.
RT_SRC := kernel-support/kmetric_cpu.c kernel-support/kmetric_host.c kernel-support/kmetric_task.c \
	kernel-support/kmetric_disk.c kernel-support/kmetric_cgroup.c kernel-support/kmetric_net.c kernel-support/kmetric_fs.c \
	kernel-support/kmetric_edac.c kernel-support/kx.c kernel-support/llview_rt.c \
	kernel-support/snrt.c kernel-support/snrt_hist.c kernel-support/snrt_obj.c kernel-support/snrt_rule.c \
	kernel-support/snrt_ent.c
RT_HDR := kernel-support/kmetric_int.h kernel-support/kcore.h kernel-support/kstate.h kernel-support/simt.h kernel-support/kx.h \
	kernel-support/snrt.h kernel-support/snrt_int.h
RT_FLAGS = -ffreestanding -nostdlib -nostdinc -isystem $$($(CLANG) -print-resource-dir)/include \
	-DKX_FREESTANDING -std=gnu11 $(WARN) -Wno-missing-prototypes -O2 -g -Ikernel-support \
	-fno-vectorize -fno-slp-vectorize -ffp-contract=off -emit-llvm
RT_BC := $(B)/lib/sentinel.host.bc $(B)/lib/sentinel.nvptx.bc

PROGRAMS := $(B)/rulec $(B)/librulec-backend.so $(B)/sentinel-inspect $(B)/sentineld $(B)/sentinelctl
TEST_PROGRAMS := $(B)/san/rulec $(B)/san/librulec-backend.so $(B)/san/test_unit $(B)/san/sentinel-inspect $(B)/san/test_kx $(B)/metrics.bundle \
	$(B)/san/sentineld $(B)/san/test_snrt $(B)/san/test_discover $(B)/tsan/test_discover $(B)/tsan/sentineld $(B)/tsan/sentinel-inspect $(B)/san/test_klog $(B)/guest-helpers.cpio.gz $(B)/static/sentinel-inspect $(B)/static/sentineld
ifeq ($(HAVE_FUZZER),1)
TEST_PROGRAMS += $(B)/fuzz_rules $(B)/fuzz_cg $(B)/fuzz_guest $(B)/fuzz_discover
endif

.PHONY: FORCE all check check-quick demo install uninstall clean distclean bench fuzz docs gpu-pack static module module-install dkms-install debian-image deb
.DELETE_ON_ERROR:

all: $(PROGRAMS)

ALL_CFLAGS = $(LIBBPF_CFLAGS) $(JANSSON_CFLAGS) $(INIH_CFLAGS) $(CURL_CFLAGS) $(MHD_CFLAGS) $(SYSTEMD_CFLAGS) $(LLVM_CFLAGS) -Irulec -Ikernel-support -Ikernel-support/module -Iengine -Inotifier \
	-DLVM_BC_HOST='"$(B)/lib/sentinel.host.bc"' -DLVM_BC_NVPTX='"$(B)/lib/sentinel.nvptx.bc"'

# The directories the programs read at run time (the configuration, the
# compiler's back end), compiled into the four objects that name them:
# build/paths.stamp changes when they do (a `make install PREFIX=/usr`
# after a build for /usr/local), and those objects are built again.
PATH_OBJS := engine/config.o tools/rulec.o sentineld/sentineld.o tools/sentinelctl.o
PATH_OBJ_FILES := $(foreach d,obj san/obj tsan/obj static/obj,$(addprefix $(B)/$(d)/,$(PATH_OBJS)))
$(PATH_OBJ_FILES): ALL_CFLAGS += -DSENTINEL_SYSCONFDIR='"$(SYSCONFDIR)"' -DSENTINEL_PKGLIBDIR='"$(PKGLIBDIR)"'
$(PATH_OBJ_FILES): $(B)/paths.stamp
$(B)/paths.stamp: FORCE
	@mkdir -p $(B)
	@printf 'SYSCONFDIR=%s\nPKGLIBDIR=%s\n' '$(SYSCONFDIR)' '$(PKGLIBDIR)' > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
FORCE:

# Header dependencies: the compiler writes each object's (-MMD) into
# OBJ.d beside it, read back below; an object without one (never built,
# or built before) is built again.
DEPFLAGS = -MMD -MP -MF $(@:.o=.d)
$(B)/obj/%.o: %.c $(B)/obj/%.d config.mk
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(OPT_CFLAGS) $(ALL_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(B)/san/obj/%.o: %.c $(B)/san/obj/%.d config.mk
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(ALL_CFLAGS) $(DEPFLAGS) -c -o $@ $<

# (named, not a pattern: a missing one then makes its object again)
DEP_FILES := $(foreach d,obj san/obj static/obj tsan/obj,$(patsubst %.c,$(B)/$(d)/%.d,$(wildcard rulec/*.c engine/*.c \
	kernel-support/*.c notifier/*.c tools/*.c sentineld/*.c tests/*.c tests/*/*.c bench/*.c)))
$(DEP_FILES):
-include $(wildcard $(DEP_FILES))

$(B)/obj/rulec/libbc.o $(B)/san/obj/rulec/libbc.o $(B)/tsan/obj/rulec/libbc.o: $(RT_BC)

$(B)/lib/sentinel.host.bc: $(RT_SRC) $(RT_HDR) config.mk
	@mkdir -p $(B)/lib/host
	for f in $(RT_SRC); do \
		$(CLANG) -target x86_64-unknown-linux-gnu $(RT_FLAGS) -c -o $(B)/lib/host/$$(basename $$f .c).bc $$f || exit 1; \
	done
	$(LLVM_BINDIR)/llvm-link -o $@ $(addprefix $(B)/lib/host/,$(notdir $(RT_SRC:.c=.bc)))

$(B)/lib/sentinel.nvptx.bc: $(RT_SRC) $(RT_HDR) config.mk
	@mkdir -p $(B)/lib/nvptx
	for f in $(RT_SRC); do \
		$(CLANG) -target nvptx64-nvidia-cuda -march=sm_70 $(RT_FLAGS) -c -o $(B)/lib/nvptx/$$(basename $$f .c).bc $$f || exit 1; \
	done
	$(LLVM_BINDIR)/llvm-link -o $@ $(addprefix $(B)/lib/nvptx/,$(notdir $(RT_SRC:.c=.bc)))

$(B)/libkernel.a: $(KS_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/san/libkernel.a: $(KS_SAN_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/sentinel-inspect: $(B)/obj/tools/sentinel-inspect.o $(ENG_OBJ) $(CC_OBJ) $(B)/librulec.a $(B)/libkernel.a
	$(CC) $(OPT_CFLAGS) $(GPUCAP_LDFLAGS) -o $@ $^ $(ALL_LIBS) $(LDFLAGS_USER)

$(B)/san/sentinel-inspect: $(SAN_DEFAULTS) $(B)/san/obj/tools/sentinel-inspect.o $(ENG_SAN_OBJ) $(CC_SAN_OBJ) $(B)/san/librulec.a $(B)/san/libkernel.a
	$(CC) $(SAN_FLAGS) $(GPUCAP_LDFLAGS) -o $@ $^ $(ALL_LIBS)

# Discovery on a real guest's image, several threads at once (tests/unit/test_discover.c):
# under ASan/UBSan, and under ThreadSanitizer (its own objects: build/tsan/).
$(B)/san/test_discover: $(SAN_DEFAULTS) $(B)/san/obj/tests/unit/test_discover.o $(B)/san/libkernel.a
	$(CC) $(SAN_FLAGS) -o $@ $^ $(KS_LIBS) -lpthread

# The kernel log's tail against the whole ring, on the same image (tests/unit/test_klog.c).
$(B)/san/test_klog: $(SAN_DEFAULTS) $(B)/san/obj/tests/unit/test_klog.o $(B)/san/libkernel.a
	$(CC) $(SAN_FLAGS) -o $@ $^ $(KS_LIBS)

# -Wno-tsan: GCC says TSan does not model atomic_thread_fence; the rings' seqlock
# reads it orders are checked by their sequence numbers, not by the fence alone
TSAN_FLAGS := -O1 -g -fPIC -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan
$(B)/tsan/obj/%.o: %.c $(B)/tsan/obj/%.d config.mk
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(TSAN_FLAGS) $(ALL_CFLAGS) $(DEPFLAGS) -c -o $@ $<

# sentineld under ThreadSanitizer: tests/image.sh runs tests/engine/test_daemon.py
# with it (the loop, the targets' searches, the reload's thread, delivery)
$(B)/tsan/sentineld: $(SD_SRC:%.c=$(B)/tsan/obj/%.o) $(ENG_SRC:%.c=$(B)/tsan/obj/%.o) $(SINK_SRC:%.c=$(B)/tsan/obj/%.o) \
		$(CC_SRC:%.c=$(B)/tsan/obj/%.o) $(RULEC_LIB_SRC:%.c=$(B)/tsan/obj/%.o) $(KS_SRC:%.c=$(B)/tsan/obj/%.o)
	$(CC) $(TSAN_FLAGS) $(GPUCAP_LDFLAGS) -o $@ $^ $(SINK_LIBS) $(ALL_LIBS)

# sentinel-inspect under ThreadSanitizer: tests/image.sh runs the CPU
# backend's tick on several threads with it (engine/cpu.c: the barrier, the
# threads' read counts)
$(B)/tsan/sentinel-inspect: $(B)/tsan/obj/tools/sentinel-inspect.o $(ENG_SRC:%.c=$(B)/tsan/obj/%.o) \
		$(CC_SRC:%.c=$(B)/tsan/obj/%.o) $(RULEC_LIB_SRC:%.c=$(B)/tsan/obj/%.o) $(KS_SRC:%.c=$(B)/tsan/obj/%.o)
	$(CC) $(TSAN_FLAGS) $(GPUCAP_LDFLAGS) -o $@ $^ $(ALL_LIBS)

$(B)/tsan/test_discover: $(B)/tsan/obj/tests/unit/test_discover.o $(KS_SRC:%.c=$(B)/tsan/obj/%.o)
	$(CC) $(TSAN_FLAGS) -o $@ $^ $(KS_LIBS) -lpthread

$(B)/san/test_kx: $(SAN_DEFAULTS) $(B)/san/obj/tests/unit/test_kx.o $(B)/san/libkernel.a
	$(CC) $(SAN_FLAGS) -o $@ $^ $(KS_LIBS) -lpthread

$(B)/librulec.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/san/librulec.a: $(SAN_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/sentineld: $(SD_SRC:%.c=$(B)/obj/%.o) $(ENG_OBJ) $(SINK_OBJ) $(CC_OBJ) $(B)/librulec.a $(B)/libkernel.a
	$(CC) $(OPT_CFLAGS) $(GPUCAP_LDFLAGS) -o $@ $^ $(SINK_LIBS) $(ALL_LIBS) $(LDFLAGS_USER)

$(B)/san/sentineld: $(SAN_DEFAULTS) $(SD_SRC:%.c=$(B)/san/obj/%.o) $(ENG_SAN_OBJ) $(SINK_SAN_OBJ) $(CC_SAN_OBJ) $(B)/san/librulec.a $(B)/san/libkernel.a
	$(CC) $(SAN_FLAGS) $(GPUCAP_LDFLAGS) -o $@ $^ $(SINK_LIBS) $(ALL_LIBS)

$(B)/sentinelctl: $(B)/obj/tools/sentinelctl.o
	$(CC) $(OPT_CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(INIH_LIBS) -lm $(LDFLAGS_USER)

# rulec is the front end alone: checking rules never maps libLLVM.  Compiling,
# --target and `rulec test` load librulec-backend.so (tools/rulec_backend.h), found
# next to rulec or in $(PKGLIBDIR); it exports one symbol (rulec_backend.map).
PKGLIBDIR := $(PREFIX)/lib/sentinel
$(B)/rulec: $(B)/obj/tools/rulec.o $(B)/librulec.a | $(B)/librulec-backend.so
	$(CC) $(OPT_CFLAGS) -o $@ $^ $(LIBS) $(JANSSON_LIBS) -ldl $(LDFLAGS_USER)

$(B)/san/rulec: $(SAN_DEFAULTS) $(B)/san/obj/tools/rulec.o $(B)/san/librulec.a | $(B)/san/librulec-backend.so
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LIBS) $(JANSSON_LIBS) -ldl

$(B)/librulec-backend.so: $(B)/obj/tools/rulec_backend.o $(B)/obj/tools/ruletest_run.o $(ENG_OBJ) $(CC_OBJ) $(B)/librulec.a $(B)/libkernel.a tools/rulec_backend.map
	$(CC) $(OPT_CFLAGS) -shared -Wl,--version-script=tools/rulec_backend.map -o $@ $(filter-out %.map,$^) $(ALL_LIBS) $(LDFLAGS_USER)

$(B)/san/librulec-backend.so: $(B)/san/obj/tools/rulec_backend.o $(B)/san/obj/tools/ruletest_run.o $(ENG_SAN_OBJ) $(CC_SAN_OBJ) $(B)/san/librulec.a $(B)/san/libkernel.a tools/rulec_backend.map
	$(CC) $(SAN_FLAGS) -shared -Wl,--version-script=tools/rulec_backend.map -o $@ $(filter-out %.map,$^) $(ALL_LIBS)

# Static helpers for the test guests (tests/guest/helpers/*.c), packed as
# a second initramfs archive that tests/guest/guest.py appends to the
# guest's own (the kernel unpacks concatenated archives in turn).
GUEST_HELPERS := $(wildcard tests/guest/helpers/*.c)
$(B)/guest-helpers.cpio.gz: $(GUEST_HELPERS) kernel-support/module/sentinel_pmem.h
	@rm -rf $(B)/guest-helpers && mkdir -p $(B)/guest-helpers/bin
	for f in $(GUEST_HELPERS); do \
		$(CC) -static -O2 -Wall -Wextra -Werror -Ikernel-support/module -o $(B)/guest-helpers/bin/$$(basename $$f .c) $$f || exit 1; \
	done
	cd $(B)/guest-helpers && find . | cpio -o -H newc --quiet | gzip -9 > ../guest-helpers.cpio.gz

# The runtime on the host (kernel-support/snrt*.c as the CPU backend runs it, with the
# host side of simt.h from llview_rt.c), laid out by engine/world.c.
SNRT_SRC := $(filter kernel-support/snrt%,$(RT_SRC))
$(B)/san/test_snrt: $(SAN_DEFAULTS) $(B)/san/obj/tests/unit/test_snrt.o $(SNRT_SRC:%.c=$(B)/san/obj/%.o) $(B)/san/obj/kernel-support/llview_rt.o \
		$(B)/san/obj/engine/world.o $(B)/san/obj/engine/reloc.o $(B)/san/librulec.a $(B)/san/libkernel.a
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LIBS) $(KS_LIBS) $(JANSSON_LIBS)

$(B)/san/test_unit: $(SAN_DEFAULTS) $(B)/san/obj/tests/unit/test_unit.o $(B)/san/librulec.a
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LIBS) $(JANSSON_LIBS)

# notifier/http.c (and the rest of HTTP_SRC) against an HTTP server of the test's own on loopback;
# and notify.c's jsonl sink (with what it renders with)
TEST_HTTP_SRC := $(HTTP_SRC) notifier/notify.c notifier/jsonl.c notifier/render.c notifier/journal.c
TEST_PROGRAMS += $(B)/san/test_http
$(B)/san/test_http: $(SAN_DEFAULTS) $(B)/san/obj/tests/unit/test_http.o $(TEST_HTTP_SRC:%.c=$(B)/san/obj/%.o) $(B)/san/librulec.a
	$(CC) $(SAN_FLAGS) -o $@ $^ $(CURL_LIBS) $(SYSTEMD_LIBS) $(LIBS) $(JANSSON_LIBS) -lpthread

# ... and under ThreadSanitizer: the delivery thread against the callers' (libcurl itself uninstrumented)
TEST_PROGRAMS += $(B)/tsan/test_http
$(B)/tsan/test_http: $(B)/tsan/obj/tests/unit/test_http.o $(TEST_HTTP_SRC:%.c=$(B)/tsan/obj/%.o) \
		$(RULEC_LIB_SRC:%.c=$(B)/tsan/obj/%.o)
	$(CC) $(TSAN_FLAGS) -o $@ $^ $(CURL_LIBS) $(SYSTEMD_LIBS) $(LIBS) $(JANSSON_LIBS) -lpthread

# libFuzzer target: the rule parser and checker, built with clang.
$(B)/fuzz_rules: tests/fuzz/fuzz_rules.c tests/fuzz/fuzz_load.h $(RULEC_LIB_SRC) $(RULEC_HDR) config.mk
	@mkdir -p $(B)
	$(CLANG) -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) -g -O1 \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		$(YAML_CFLAGS) $(JANSSON_CFLAGS) -Irulec -Iengine -Ikernel-support -o $@ tests/fuzz/fuzz_rules.c $(RULEC_LIB_SRC) $(LIBS) $(JANSSON_LIBS)

# sentinel-inspect with LLVM, libbpf, libelf, jansson and libyaml linked
# statically: for GPU machines with no package registry (tests/gpu/pack.sh).
# Only glibc, libstdc++ and libzstd stay shared; and libcurl, libsystemd and
# libmicrohttpd, this last one from lib/ beside the binary where the GPU
# machine has none (tests/gpu/pack.sh puts it there; RUNPATH: its own
# dependencies, GnuTLS, come from the system as libcurl's do).
LLVM_STATIC = $$($(LLVM_CONFIG) --link-static --ldflags) \
	$$($(LLVM_CONFIG) --link-static --libs orcjit x86 nvptx passes bitreader bitwriter irreader linker)
PORTABLE_LIBS = -Wl,--as-needed $(LLVM_STATIC) -Wl,-Bstatic -lbpf -lelf -ljansson -linih -lyaml -lz \
	-Wl,-Bdynamic -l:libcurl.so.4 -l:libmicrohttpd.so.12 -l:libsystemd.so.0 -l:libzstd.so.1 -lstdc++ -lm -ldl -lpthread -lrt \
	-Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN/lib'
$(B)/portable/sentinel-inspect: $(B)/obj/tools/sentinel-inspect.o $(ENG_OBJ) $(CC_OBJ) $(B)/librulec.a $(B)/libkernel.a
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) $(GPUCAP_LDFLAGS) -o $@ $^ $(PORTABLE_LIBS)

$(B)/portable/sentineld: $(SD_SRC:%.c=$(B)/obj/%.o) $(ENG_OBJ) $(SINK_OBJ) $(CC_OBJ) $(B)/librulec.a $(B)/libkernel.a
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) $(GPUCAP_LDFLAGS) -o $@ $^ $(PORTABLE_LIBS)

# the hostile-guest fuzzer without libFuzzer, for the GPU (tests/fuzz/fuzz_guest.c)
$(B)/portable/fuzz_guest_gpu: tests/fuzz/fuzz_guest.c tests/fuzz/fuzz_image.h $(ENG_OBJ) $(CC_OBJ) $(B)/librulec.a $(B)/libkernel.a
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(OPT_CFLAGS) $(ALL_CFLAGS) -DFG_STANDALONE $(GPUCAP_LDFLAGS) -o $@ $^ $(PORTABLE_LIBS)

$(B)/portable/hostile_image: $(B)/obj/bench/hostile_image.o $(B)/libkernel.a
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) -o $@ $^ -Wl,-Bstatic -lbpf -lelf -lz -Wl,-Bdynamic -l:libzstd.so.1

$(B)/portable/sentinelctl: $(B)/obj/tools/sentinelctl.o
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) -o $@ $^ -Wl,-Bstatic -ljansson -linih -Wl,-Bdynamic -lm

# A real Debian 12 system (systemd, node_exporter, nginx, PostgreSQL; Debian's
# kernel) as a QEMU image, built once by mmdebstrap and cached under
# .cache/debian (root and Debian's archive; tests/debian/mkimage.sh)
debian-image:
	sh tests/debian/mkimage.sh

gpu-pack: $(B)/portable/sentinel-inspect $(B)/portable/sentineld $(B)/portable/sentinelctl $(B)/rulec $(B)/metrics.bundle \
	$(B)/procpoll $(B)/syncprobe $(B)/regprobe $(B)/capprobe
	sh tests/gpu/pack.sh

# The sentinel_pmem module (kernel-support/module/), built by the kernel's
# own Kbuild against a kernel's build tree:
#   make module [KDIR=...]   -> build/module/RELEASE/sentinel_pmem.ko (default: the running kernel)
#   make module-install      that module for its kernel, the udev rule, depmod (root)
#   make dkms-install        the source to /usr/src/sentinel-pmem-VERSION for DKMS, which builds it
#                            for every kernel the distribution installs, and loaded at boot
#                            (modules-load.d) (root; docs/targets.md)
KDIR ?= /lib/modules/$(shell uname -r)/build
UDEVRULESDIR ?= /lib/udev/rules.d
# dkms-install: the module is loaded at every boot (systemd-modules-load)
MODULESLOADDIR ?= /usr/lib/modules-load.d
MODULE_FILES := kernel-support/module/Kbuild kernel-support/module/Makefile kernel-support/module/sentinel_pmem.c \
	kernel-support/module/sentinel_pmem.h
module:
	@sh kernel-support/module/build.sh "$(KDIR)" $(B)/module

module-install:
	@ko=$$(sh kernel-support/module/build.sh "$(KDIR)" $(B)/module) || exit 1; rel=$$(basename $$(dirname $$ko)); \
	install -D -m 644 $$ko $(DESTDIR)/lib/modules/$$rel/updates/sentinel_pmem.ko && \
	install -D -m 644 kernel-support/module/60-sentinel-pmem.rules $(DESTDIR)$(UDEVRULESDIR)/60-sentinel-pmem.rules && \
	if [ -z "$(DESTDIR)" ]; then PATH=$$PATH:/sbin:/usr/sbin depmod -a $$rel; fi && \
	echo "module-install: /lib/modules/$$rel/updates/sentinel_pmem.ko; load it with: modprobe sentinel_pmem"

dkms-install:
	install -d $(DESTDIR)/usr/src/sentinel-pmem-$(VERSION)
	install -m 644 $(MODULE_FILES) $(DESTDIR)/usr/src/sentinel-pmem-$(VERSION)/
	sed 's/#MODULE_VERSION#/$(VERSION)/' kernel-support/module/dkms.conf > $(DESTDIR)/usr/src/sentinel-pmem-$(VERSION)/dkms.conf
	install -D -m 644 kernel-support/module/60-sentinel-pmem.rules $(DESTDIR)$(UDEVRULESDIR)/60-sentinel-pmem.rules
	install -d $(DESTDIR)$(MODULESLOADDIR)
	echo sentinel_pmem > $(DESTDIR)$(MODULESLOADDIR)/sentinel-pmem.conf
	@if [ -z "$(DESTDIR)" ]; then \
		command -v dkms >/dev/null || { echo "dkms-install: no dkms (apt-get install dkms), the source is in /usr/src/sentinel-pmem-$(VERSION)" >&2; exit 1; }; \
		dkms add sentinel-pmem/$(VERSION) && dkms install sentinel-pmem/$(VERSION); fi

# make deb: the Debian packages (debian/): sentinel and sentinel-pmem-dkms,
# built by dpkg-buildpackage in a copy of the tree -> build/deb/*.deb, and
# what lintian says of them in build/deb/lintian.txt; docs/install.md
deb:
	@sh tools/mkdeb.sh $(B)/deb

# make static: sentinel-inspect and sentineld linked statically, glibc and
# all: one file to copy onto a machine, or to run inside a test guest.  The
# CPU backend only, no compiler (they take bundles rulec made elsewhere:
# rulec/nocompile.c), and of the sinks the log and JSON lines
# (notifier/static.c says why).
STATIC_ENG_SRC := $(filter-out engine/gpucap.c,$(ENG_SRC))
STATIC_OBJ := $(addprefix $(B)/static/obj/,$(RULEC_LIB_SRC:.c=.o) $(KS_SRC:.c=.o) $(STATIC_ENG_SRC:.c=.o) rulec/nocompile.o)
STATIC_LIBS := -Wl,-Bstatic -lbpf -lelf -lz -ljansson -linih -lyaml -lm -lpthread
$(B)/static/obj/%.o: %.c $(B)/static/obj/%.d config.mk
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O2 -g -DSENTINEL_STATIC $(ALL_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(B)/static/sentinel-inspect: $(B)/static/obj/tools/sentinel-inspect.o $(STATIC_OBJ)
	$(CC) -static -o $@ $^ $(STATIC_LIBS)

$(B)/static/sentineld: $(SD_SRC:%.c=$(B)/static/obj/%.o) $(B)/static/obj/notifier/notify.o $(B)/static/obj/notifier/jsonl.o \
		$(B)/static/obj/notifier/static.o $(STATIC_OBJ)
	$(CC) -static -o $@ $^ $(STATIC_LIBS)

static: $(B)/static/sentinel-inspect $(B)/static/sentineld

# Every catalog metric, for the guest tests: one bundle for every kernel.
$(B)/metrics.bundle: $(B)/rulec $(B)/librulec-backend.so $(RT_BC)
	$(B)/rulec --all-metrics -o $@

check: $(PROGRAMS) $(TEST_PROGRAMS)
	@HAVE_FUZZER=$(HAVE_FUZZER) HAVE_PYSCHEMA=$(HAVE_PYSCHEMA) PYTHON="$(PYTHON)" \
		sh tests/run.sh

# The edit loop's tier: no TCG guest but the hostile-guest fuzzer's one
# captured image (docs/testing.md); make check stays the whole suite.
check-quick: $(PROGRAMS) $(TEST_PROGRAMS)
	@HAVE_FUZZER=$(HAVE_FUZZER) HAVE_PYSCHEMA=$(HAVE_PYSCHEMA) PYTHON="$(PYTHON)" SENTINEL_CHECK_TIER=quick \
		sh tests/run.sh

# libFuzzer target: the code generator on every input the front end accepts.
$(B)/fuzz_cg: tests/fuzz/fuzz_cg.c tests/fuzz/fuzz_load.h $(RULEC_LIB_SRC) $(CC_SRC) $(RULEC_HDR) $(RT_BC) config.mk
	@mkdir -p $(B)
	$(CLANG) -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) -g -O1 \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		$(YAML_CFLAGS) $(JANSSON_CFLAGS) $(ALL_CFLAGS) -o $@ tests/fuzz/fuzz_cg.c $(RULEC_LIB_SRC) $(CC_SRC) \
		$(LIBS) $(JANSSON_LIBS) $(LLVM_LIBS) -lpthread

# libFuzzer target: a hostile guest; writes into a real guest's RAM image,
# then a tick of the shipped rules on the CPU backend (the file says how).
$(B)/fuzz_guest: tests/fuzz/fuzz_guest.c tests/fuzz/fuzz_image.h $(RULEC_LIB_SRC) $(KS_SRC) $(CC_SRC) $(ENG_SRC) $(RULEC_HDR) $(KS_HDR) $(ENG_HDR) \
		$(RT_BC) config.mk
	@mkdir -p $(B)
	$(CLANG) -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) -g -O1 \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		$(YAML_CFLAGS) $(ALL_CFLAGS) $(GPUCAP_LDFLAGS) -o $@ tests/fuzz/fuzz_guest.c $(RULEC_LIB_SRC) $(KS_SRC) $(CC_SRC) \
		$(ENG_SRC) $(ALL_LIBS)

# libFuzzer target: discovery and the host's parsers of guest memory, on
# a real guest's RAM image an input has written (the file says how).
# kx.c (address translation, every read), ksyms.c and kbtf.c without
# comparison tracing: kx.c compares page-table entries and addresses,
# never an input's bytes, and its hooks were a third of an input's time;
# ksyms.c's and kbtf.c's integer compares are the counters, hash slots and
# type kinds of scans over 163,000 symbols and 100,000 types, whose hooks
# were half of the kallsyms stage's time and two thirds of the layout
# stage's (their string compares still reach libFuzzer: the strcmp hook).
# kx.c's readers, called from the other files, through the fuzzer's
# wrappers: they record what is read.  Every file's large blocks from the
# fuzzer's allocator (fuzz_alloc.h: ASan maps each afresh, and page
# faults were a third of a run here).  No use-after-return checks (a call
# into ASan's fake stack per function with arrays on its stack: a few
# percent of every stage, for a kind of bug these files' callers, which
# return values, not pointers to locals, do not have).
FD_NOCMP_SRC = kernel-support/kx.c kernel-support/ksyms.c kernel-support/kbtf.c
FD_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) -g -O1 -fno-sanitize-recover=undefined \
	-fsanitize-address-use-after-return=never $(LIBBPF_CFLAGS) -Ikernel-support -Ikernel-support/module \
	-include tests/fuzz/fuzz_alloc.h
$(B)/fuzz_discover: tests/fuzz/fuzz_discover.c tests/fuzz/fuzz_image.h tests/fuzz/fuzz_alloc.c tests/fuzz/fuzz_alloc.h \
		$(KS_SRC) $(KS_HDR) config.mk
	@mkdir -p $(B)/fuzz_discover-obj
	$(foreach f,$(FD_NOCMP_SRC),$(CLANG) $(FD_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined \
		-fno-sanitize-coverage=trace-cmp -c -o $(B)/fuzz_discover-obj/$(notdir $(f:.c=.o)) $(f) &&) true
	$(CLANG) $(FD_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ tests/fuzz/fuzz_discover.c tests/fuzz/fuzz_alloc.c \
		$(patsubst %.c,$(B)/fuzz_discover-obj/%.o,$(notdir $(FD_NOCMP_SRC))) $(filter-out $(FD_NOCMP_SRC),$(KS_SRC)) \
		$(KS_LIBS) $(foreach f,kx_read kx_read8 kx_read16 kx_read32 kx_read64 kx_phys_ptr kx_list_next,-Wl,--wrap=$(f))

fuzz: $(B)/fuzz_rules $(B)/fuzz_cg $(B)/fuzz_guest $(B)/fuzz_discover
	sh tests/fuzz/run.sh long rules
	sh tests/fuzz/run.sh long cg
	sh tests/fuzz/run.sh long guest
	sh tests/fuzz/run.sh long discover

$(B)/procpoll: bench/procpoll.c
	$(CC) -O2 -o $@ $<

# Does a reload work in green contexts (tests/gpu/greenprobe.c; needs cuda.h).
$(B)/greenprobe: tests/gpu/greenprobe.c tests/gpu/probe.h
	$(CC) -std=gnu11 $(WARN) -O2 $(CUDA_CFLAGS) -o $@ $< -L/usr/local/cuda/lib64/stubs -lcuda -lpthread

# Which CUDA driver calls wait for a running kernel (tests/gpu/syncprobe.c).
$(B)/syncprobe: tests/gpu/syncprobe.c tests/gpu/probe.h engine/cudadrv.h
	$(CC) -std=gnu11 $(WARN) -O2 -Iengine -o $@ $< -ldl -lpthread

# Can the GPU read a VM_IO|VM_PFNMAP mapping of RAM (tests/gpu/regprobe.c)?
$(B)/regprobe: tests/gpu/regprobe.c tests/gpu/probe.h engine/cudadrv.h
	$(CC) -std=gnu11 $(WARN) -O2 -Iengine -o $@ $< -ldl

# libcuda's cap on registered memory, the lift (engine/gpucap.c) and chunked
# registration of ranges (tests/gpu/capprobe.c).
$(B)/capprobe: tests/gpu/capprobe.c tests/gpu/probe.h engine/gpucap.c engine/gpucap.h engine/gpucap.dynlist engine/cudadrv.h
	$(CC) -std=gnu11 $(WARN) -O2 -Iengine -Wl,--dynamic-list=engine/gpucap.dynlist -o $@ tests/gpu/capprobe.c engine/gpucap.c -ldl

# bench/hostile.py's hostile guest, made from a copy of a real image
$(B)/hostile_image: $(B)/obj/bench/hostile_image.o $(B)/libkernel.a
	$(CC) $(OPT_CFLAGS) -o $@ $^ $(KS_LIBS)

$(B)/kmodel_bench: $(B)/obj/bench/kmodel_bench.o $(ENG_OBJ) $(CC_OBJ) $(B)/librulec.a $(B)/libkernel.a
	$(CC) $(OPT_CFLAGS) $(GPUCAP_LDFLAGS) -o $@ $^ $(ALL_LIBS) $(LDFLAGS_USER)

bench: $(B)/rulec $(B)/kmodel_bench
	sh bench/rulec_check.sh
	$(PYTHON) bench/kernel_model.py

# The main job.  Until the engine lands this checks the shipped rules and
# prints the metric catalog the detector will evaluate them against.
# The main job: sentineld with the shipped rules against a demo guest, and
# an alert when the guest's CPUs are hogged (examples/demo.py).
demo: $(PROGRAMS)
	$(B)/rulec --check rules/ examples/
	$(PYTHON) examples/demo.py $(B)

docs: $(B)/rulec
	$(B)/rulec --list-metrics=markdown > docs/metrics.md

SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
# the manual pages (docs/man): rulec(1), sentineld(8), sentinelctl(8),
# sentinel-inspect(8), sentinel.conf(5), sentinel-rules(5)
MANDIR ?= $(DATADIR)/man

# Programs, the shipped rules (as the default rule directory, and for
# reference), the configuration template and the systemd unit.  An
# existing /etc/sentinel/sentinel.conf or rule directory is left alone.
install: $(PROGRAMS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)/sentinel/rules \
		$(DESTDIR)$(DATADIR)/sentinel/examples $(DESTDIR)$(DATADIR)/doc/sentinel \
		$(DESTDIR)$(SYSCONFDIR)/sentinel $(DESTDIR)$(SYSTEMDUNITDIR)
	install -m 755 $(B)/rulec $(B)/sentinel-inspect $(B)/sentineld $(B)/sentinelctl $(DESTDIR)$(BINDIR)/
	install -d $(DESTDIR)$(PKGLIBDIR)
	install -m 644 $(B)/librulec-backend.so $(DESTDIR)$(PKGLIBDIR)/
	install -m 644 rules/*.yaml rules/schema.json $(DESTDIR)$(DATADIR)/sentinel/rules/
	install -m 644 examples/*.yaml examples/sentinel.conf $(DESTDIR)$(DATADIR)/sentinel/examples/
	install -m 644 README.md docs/*.md $(DESTDIR)$(DATADIR)/doc/sentinel/
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 644 docs/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 docs/man/*.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 644 docs/man/*.8 $(DESTDIR)$(MANDIR)/man8/
	install -d $(DESTDIR)$(DATADIR)/bash-completion/completions
	install -m 644 tools/completion/sentinel.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/rulec
	install -m 644 tools/completion/sentinel.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/sentinelctl
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/sentinel/sentinel.conf ]; then \
		echo "install: keeping $(DESTDIR)$(SYSCONFDIR)/sentinel/sentinel.conf"; \
	else \
		sed 's|/etc/sentinel/|$(SYSCONFDIR)/sentinel/|g' examples/sentinel.conf > $(DESTDIR)$(SYSCONFDIR)/sentinel/sentinel.conf && \
		chmod 644 $(DESTDIR)$(SYSCONFDIR)/sentinel/sentinel.conf; fi
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/sentinel/rules ]; then \
		echo "install: keeping $(DESTDIR)$(SYSCONFDIR)/sentinel/rules/"; \
	else \
		install -d $(DESTDIR)$(SYSCONFDIR)/sentinel/rules && \
		install -m 644 rules/*.yaml $(DESTDIR)$(SYSCONFDIR)/sentinel/rules/; fi
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@DATADIR@|$(DATADIR)|g' \
		sentineld/sentineld.service.in > $(DESTDIR)$(SYSTEMDUNITDIR)/sentineld.service
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/sentineld.service

# Leaves the configuration and rules in $(SYSCONFDIR)/sentinel: they are the admin's.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/rulec $(DESTDIR)$(BINDIR)/sentinel-inspect $(DESTDIR)$(BINDIR)/sentineld \
		$(DESTDIR)$(BINDIR)/sentinelctl $(DESTDIR)$(SYSTEMDUNITDIR)/sentineld.service \
		$(DESTDIR)$(PKGLIBDIR)/librulec-backend.so
	rm -f $(DESTDIR)$(MANDIR)/man1/rulec.1 $(DESTDIR)$(MANDIR)/man8/sentineld.8 \
		$(DESTDIR)$(MANDIR)/man8/sentinelctl.8 $(DESTDIR)$(MANDIR)/man8/sentinel-inspect.8 \
		$(DESTDIR)$(MANDIR)/man5/sentinel.conf.5 $(DESTDIR)$(MANDIR)/man5/sentinel-rules.5
	rm -f $(DESTDIR)$(DATADIR)/bash-completion/completions/rulec $(DESTDIR)$(DATADIR)/bash-completion/completions/sentinelctl
	rm -rf $(DESTDIR)$(DATADIR)/sentinel $(DESTDIR)$(DATADIR)/doc/sentinel

clean:
	rm -rf $(B)

distclean: clean
	rm -f config.mk
