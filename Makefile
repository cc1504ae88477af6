# Sentinel top-level Makefile.
#
#   make            build everything (runs ./configure first if needed)
#   make check      build, then run the test suite (ASan/UBSan build, fuzz smoke)
#   make demo       the main job (see README)
#   make install    install under $(PREFIX) (DESTDIR honoured)
#   make clean      remove build outputs;  make distclean also config.mk

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
OPT_CFLAGS := -O2 -g
SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LIBS := $(YAML_LIBS) -lm

RULEC_LIB_SRC := rulec/util.c rulec/diag.c rulec/catalog.c rulec/yamlt.c rulec/units.c \
	rulec/parse.c rulec/check.c rulec/rulefile.c
RULEC_HDR := $(wildcard rulec/*.h rulec/*.def)

LIB_OBJ := $(RULEC_LIB_SRC:%.c=$(B)/obj/%.o)
SAN_OBJ := $(RULEC_LIB_SRC:%.c=$(B)/san/obj/%.o)

PROGRAMS := $(B)/rulec
TEST_PROGRAMS := $(B)/san/rulec $(B)/san/test_unit
ifeq ($(HAVE_FUZZER),1)
TEST_PROGRAMS += $(B)/fuzz_rules
endif

.PHONY: all check demo install uninstall clean distclean bench fuzz docs
.DELETE_ON_ERROR:

all: $(PROGRAMS)

$(B)/obj/%.o: %.c $(RULEC_HDR) config.mk
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(OPT_CFLAGS) -Irulec -c -o $@ $<

$(B)/san/obj/%.o: %.c $(RULEC_HDR) config.mk
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -Irulec -c -o $@ $<

$(B)/librulec.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/san/librulec.a: $(SAN_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/rulec: $(B)/obj/rulec/rulec.o $(B)/librulec.a
	$(CC) $(OPT_CFLAGS) -o $@ $^ $(LIBS) $(LDFLAGS_USER)

$(B)/san/rulec: $(B)/san/obj/rulec/rulec.o $(B)/san/librulec.a
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LIBS)

$(B)/san/test_unit: $(B)/san/obj/tests/unit/test_unit.o $(B)/san/librulec.a
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LIBS)

# libFuzzer target: the rule parser and checker, built with clang.
$(B)/fuzz_rules: tests/fuzz/fuzz_rules.c $(RULEC_LIB_SRC) $(RULEC_HDR) config.mk
	@mkdir -p $(B)
	$(CLANG) -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) -g -O1 \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		$(YAML_CFLAGS) -Irulec -o $@ tests/fuzz/fuzz_rules.c $(RULEC_LIB_SRC) $(LIBS)

check: $(PROGRAMS) $(TEST_PROGRAMS)
	@HAVE_FUZZER=$(HAVE_FUZZER) HAVE_PYSCHEMA=$(HAVE_PYSCHEMA) PYTHON="$(PYTHON)" \
		sh tests/run.sh

fuzz: $(B)/fuzz_rules
	sh tests/fuzz/run.sh long

bench: $(B)/rulec
	sh bench/rulec_check.sh

# The main job.  Until the engine lands this checks the shipped rules and
# prints the metric catalog the detector will evaluate them against.
demo: $(B)/rulec
	$(B)/rulec --check rules/ examples/
	@echo "demo: the rules above are valid. sentineld (the detector) is not built yet;"
	@echo "demo: see README.md 'Status' for what runs today."

docs: $(B)/rulec
	$(B)/rulec --list-metrics=markdown > docs/metrics.md

install: $(PROGRAMS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)/sentinel/rules \
		$(DESTDIR)$(DATADIR)/sentinel/examples $(DESTDIR)$(DATADIR)/doc/sentinel
	install -m 755 $(B)/rulec $(DESTDIR)$(BINDIR)/rulec
	install -m 644 rules/*.yaml rules/schema.json $(DESTDIR)$(DATADIR)/sentinel/rules/
	install -m 644 examples/*.yaml $(DESTDIR)$(DATADIR)/sentinel/examples/
	install -m 644 README.md docs/*.md $(DESTDIR)$(DATADIR)/doc/sentinel/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/rulec
	rm -rf $(DESTDIR)$(DATADIR)/sentinel $(DESTDIR)$(DATADIR)/doc/sentinel

clean:
	rm -rf $(B)

distclean: clean
	rm -f config.mk
