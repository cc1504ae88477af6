/* libbc.c - the runtime library's bitcode, built into rulec.
 *
 * make builds build/lib/sentinel.{host,nvptx}.bc from the metric library
 * (kernel-support/kmetric_*.c), the translation runtime (kx.c, llview_rt.c)
 * and the evaluation runtime (kernel-support/snrt*.c); the assembler pulls them in
 * here, so rulec needs no files beside itself.
 */
#ifndef LVM_BC_HOST
#error "build with -DLVM_BC_HOST=\"path\" -DLVM_BC_NVPTX=\"path\""
#endif

__asm__(".section .rodata\n"
	".balign 16\n"
	".globl lvm_bc_host\n"
	"lvm_bc_host:\n"
	".incbin \"" LVM_BC_HOST "\"\n"
	".globl lvm_bc_host_end\n"
	"lvm_bc_host_end:\n"
	".balign 16\n"
	".globl lvm_bc_nvptx\n"
	"lvm_bc_nvptx:\n"
	".incbin \"" LVM_BC_NVPTX "\"\n"
	".globl lvm_bc_nvptx_end\n"
	"lvm_bc_nvptx_end:\n"
	".previous\n");
