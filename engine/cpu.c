/* cpu.c - the CPU backend (see cpu.h). */
#include "cpu.h"
#include "core.h"
#include "lvm.h"

#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct CpuCode {
	LLVMOrcLLJITRef jit;
	void (*tick)(sn_world *, uint32_t, uint32_t, uint64_t);
	void (*handoff)(sn_world *, uint32_t, uint32_t);
	void (*feed)(sn_world *, uint64_t, const sn_feed *);
	kx_mem *mem;
	uint64_t *relo;
	size_t nrelo;
};

static int cpu_lookup(CpuCode *c, const char *name, void **out, char *err, size_t n)
{
	LLVMOrcExecutorAddress a = 0;
	LLVMErrorRef e = LLVMOrcLLJITLookup(c->jit, &a, name);
	if (e)
		return lvm_error(e, name, err, n);
	*out = (void *)(uintptr_t)a;
	return 0;
}

int cpu_open(const Bundle *b, CpuCode **out, char *err, size_t n)
{
	if (!b->host_obj || !b->host_len) {
		snprintf(err, n, "the bundle has no x86-64 code for the CPU backend");
		return -ENOEXEC;
	}
	lvm_ensure_init();
	CpuCode *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	LLVMErrorRef e = LLVMOrcCreateLLJIT(&c->jit, NULL);
	if (e) {
		free(c);
		return lvm_error(e, "the JIT linker for the CPU backend", err, n);
	}
	LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(c->jit);
	LLVMOrcDefinitionGeneratorRef gen;
	/* the code may call memcpy/memset: take them from this process */
	e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(c->jit), NULL, NULL);
	if (e)
		goto fail;
	LLVMOrcJITDylibAddGenerator(jd, gen);
	LLVMMemoryBufferRef obj = LLVMCreateMemoryBufferWithMemoryRangeCopy(b->host_obj, b->host_len, "bundle.o");
	e = LLVMOrcLLJITAddObjectFile(c->jit, jd, obj);
	if (e)
		goto fail;
	void *tick = NULL, *mem = NULL, *relo = NULL, *handoff = NULL, *feed = NULL;
	int r = cpu_lookup(c, "sn_tick", &tick, err, n);
	if (!r)
		r = cpu_lookup(c, "sn_handoff", &handoff, err, n);
	if (!r)
		r = cpu_lookup(c, "sn_feed_tick", &feed, err, n);
	if (!r)
		r = cpu_lookup(c, "__sentinel_mem", &mem, err, n);
	if (!r)
		r = cpu_lookup(c, CORE_TABLE, &relo, err, n);
	if (r) {
		cpu_close(c);
		return r;
	}
	c->tick = (void (*)(sn_world *, uint32_t, uint32_t, uint64_t))tick;
	c->handoff = (void (*)(sn_world *, uint32_t, uint32_t))handoff;
	c->feed = (void (*)(sn_world *, uint64_t, const sn_feed *))feed;
	c->mem = mem;
	c->relo = relo;
	c->nrelo = b->relos.n;
	*out = c;
	return 0;
fail:;
	int rc = lvm_error(e, "loading the bundle's x86-64 code", err, n);
	cpu_close(c);
	return rc;
}

int cpu_bind(CpuCode *c, const kx_mem *mem, const uint64_t *relo, size_t nrelo, char *err, size_t n)
{
	if (nrelo != c->nrelo) {
		snprintf(err, n, "relocation table of %zu entries for code that has %zu", nrelo, c->nrelo);
		return -EINVAL;
	}
	memcpy(c->mem, mem, sizeof *mem);
	memcpy(c->relo, relo, nrelo * sizeof *relo);
	return 0;
}

void cpu_tick(CpuCode *c, sn_world *w, uint64_t now)
{
	c->tick(w, 0, 1, now);
}

void cpu_handoff(CpuCode *c, sn_world *w)
{
	c->handoff(w, 0, 1);
}

void cpu_feed_tick(CpuCode *c, sn_world *w, uint64_t now, const sn_feed *f)
{
	c->feed(w, now, f);
}

void cpu_close(CpuCode *c)
{
	if (!c)
		return;
	if (c->jit) {
		LLVMErrorRef e = LLVMOrcDisposeLLJIT(c->jit);
		if (e)
			LLVMConsumeError(e);
	}
	free(c);
}
