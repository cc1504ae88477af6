/* kstate.h - a task's state as a letter, as /proc/PID/stat shows it.
 *
 * The kernel's task_state_array (fs/proc/array.c), indexed by fls() of the
 * state's TASK_REPORT bits: R running, S sleeping, D uninterruptible, T
 * stopped, t traced, X dead, Z zombie, P parked, I idle.  One list for the
 * metric library (kmetric_task.c, host and NVPTX) and the rule checker and rule tests (the letters a rule may compare with).
 * Freestanding.
 */
#ifndef SENTINEL_KSTATE_H
#define SENTINEL_KSTATE_H

#define KSTATE_LETTERS "RSDTtXZPI"

#endif
