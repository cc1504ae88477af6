/* kwalk.h - kernel walks every reader needs: tasks (freestanding, kx.h).
 *
 * Struct layouts are not compiled in: a layout struct of field offsets is
 * filled from the target's BTF on the host (kw_task_layout) and passed to
 * the freestanding readers, which run unchanged on the CPU and the GPU.
 */
#ifndef SENTINEL_KWALK_H
#define SENTINEL_KWALK_H

#include "kx.h"

#define KW_MAX_TASKS 65536u      /* cap on any task-list walk */

typedef struct KwTaskLayout {
	uint32_t tasks, pid, tgid, comm, state, state_size, exit_state, real_parent, flags;
	uint32_t stime, utime, nvcsw, nivcsw;
} KwTaskLayout;

typedef struct KwTask {
	int32_t pid, tgid, ppid;
	uint32_t flags;
	uint32_t raw_state, exit_state;
	char state;                  /* /proc letter: R S D T t X Z P I */
	char comm[16];
	uint64_t stime, utime, nvcsw, nivcsw;
} KwTask;

/* Read the task_struct at va.  Returns 0 or a KX_ error. */
int kw_task_read(const kx_mem *m, const KwTaskLayout *L, uint64_t va, KwTask *out);
/* The /proc state letter for raw __state and exit_state values. */
char kw_state_letter(uint32_t state, uint32_t exit_state);

#ifndef KX_FREESTANDING
#include <stddef.h>
struct btf;
/* Fill L from BTF: 0, or -errno with a message naming the missing field. */
int kw_task_layout(const struct btf *btf, KwTaskLayout *L, char *err, size_t errlen);
#endif

#endif
