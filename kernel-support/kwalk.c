/* kwalk.c - freestanding kernel walks (see kwalk.h). */
#include "kwalk.h"
#include "kstate.h"

/* task states as include/linux/sched.h has them since 5.14 */
#define TASK_REPORT     0x7fu
#define TASK_NOLOAD     0x400u
#define TASK_UNINTERRUPTIBLE 0x2u
#define TASK_IDLE       (TASK_UNINTERRUPTIBLE | TASK_NOLOAD)

char kw_state_letter(uint32_t state, uint32_t exit_state)
{
	static const char letters[] = KSTATE_LETTERS;
	if (state == TASK_IDLE)
		return 'I';
	uint32_t s = (state | exit_state) & TASK_REPORT, i = 0;
	while (s) {          /* fls(): 1-based index of the highest set bit */
		i++;
		s >>= 1;
	}
	return i < sizeof letters - 1 ? letters[i] : '?';
}

static int kw_u32(const kx_mem *m, uint64_t va, uint32_t *v) { return kx_read32(m, va, v); }

int kw_task_read(const kx_mem *m, const KwTaskLayout *L, uint64_t va, KwTask *out)
{
	uint32_t pid, tgid, state = 0, exit_state, flags, ptgid = 0;
	uint64_t parent;
	int e;
	if ((e = kw_u32(m, va + L->pid, &pid)) || (e = kw_u32(m, va + L->tgid, &tgid)) ||
	    (e = kw_u32(m, va + L->exit_state, &exit_state)) || (e = kw_u32(m, va + L->flags, &flags)) ||
	    (e = kx_read64(m, va + L->real_parent, &parent)) ||
	    (e = kx_read(m, va + L->comm, out->comm, 16)))
		return e;
	if (L->state_size == 8) {
		uint64_t s64;
		if ((e = kx_read64(m, va + L->state, &s64)))
			return e;
		state = (uint32_t)s64;
	} else if ((e = kw_u32(m, va + L->state, &state))) {
		return e;
	}
	if (kx_read64(m, va + L->stime, &out->stime) || kx_read64(m, va + L->utime, &out->utime) ||
	    kx_read64(m, va + L->nvcsw, &out->nvcsw) || kx_read64(m, va + L->nivcsw, &out->nivcsw))
		return KX_EFAULT;
	/* the parent may be gone or torn: that is a read error for ppid only */
	if (parent && kw_u32(m, parent + L->tgid, &ptgid))
		ptgid = 0;
	out->comm[15] = 0;
	out->pid = (int32_t)pid;
	out->tgid = (int32_t)tgid;
	out->ppid = (int32_t)ptgid;
	out->flags = flags;
	out->raw_state = state;
	out->exit_state = exit_state;
	out->state = kw_state_letter(state, exit_state);
	if (pid > 0x400000u || tgid > 0x400000u)          /* PID_MAX_LIMIT: 4M */
		return KX_ERANGE;
	return KX_OK;
}
