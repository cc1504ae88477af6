/* sentinel-dstate - put a task into uninterruptible sleep (state D) until
 * it is killed: the injector for hung-task tests.
 *
 *   sentinel-dstate [NAME]
 *
 * The process names itself NAME (default "hung-task") and vforks: a vfork
 * parent waits for its child to exec or exit in TASK_KILLABLE, which is
 * TASK_UNINTERRUPTIBLE to /proc ("D (disk sleep)") and to the scheduler's
 * counters (no context switch while it waits).  The child never execs: it
 * only calls pause(), so the parent sleeps in D until someone kills it
 * (SIGKILL ends a killable wait; the child is then killed too by the
 * test).  No kernel module, no device: it works on any guest.  Static,
 * so it runs from the busybox initramfs.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc > 2 || (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
		fprintf(stderr, "usage: sentinel-dstate [NAME]\n"
			"  puts this process in state D (a vfork wait) until it is killed\n");
		return 2;
	}
	prctl(PR_SET_NAME, argc == 2 ? argv[1] : "hung-task", 0, 0, 0);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	pid_t child = vfork();
	if (child == 0) {
		/* shares the parent's memory until exec or exit: touch nothing */
		for (;;)
			pause();
	}
	return child < 0;
}
