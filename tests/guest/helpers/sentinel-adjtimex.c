/* sentinel-adjtimex - the kernel clock's NTP state, as adjtimex(2) reports
 * it, or set as a time daemon would: the truth for the clock metrics.
 *
 *   sentinel-adjtimex                        print it
 *   sentinel-adjtimex set MAXERR ESTERR OFFSET
 *                                            a daemon's update: maximum and
 *                                            estimated error (us), a phase
 *                                            offset (ns) for the PLL, status
 *                                            PLL | NANO (so synchronised)
 *
 * Prints one line: "status S state R maxerror US esterror US offset O
 * nano N" (offset in ns when nano is 1, else us; state is adjtimex's return,
 * 5 = TIME_ERROR).  Static, so it runs from the busybox initramfs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>

int main(int argc, char **argv)
{
	struct timex t;
	memset(&t, 0, sizeof t);
	if (argc == 5 && !strcmp(argv[1], "set")) {
		t.modes = ADJ_MAXERROR | ADJ_ESTERROR | ADJ_STATUS | ADJ_NANO;
		t.maxerror = atol(argv[2]);
		t.esterror = atol(argv[3]);
		t.status = STA_PLL | STA_NANO;
		if (adjtimex(&t) < 0) {
			perror("sentinel-adjtimex: adjtimex (set)");
			return 1;
		}
		memset(&t, 0, sizeof t);
		t.modes = ADJ_OFFSET | ADJ_NANO;   /* after STA_PLL: the PLL takes the offset */
		t.offset = atol(argv[4]);
		if (adjtimex(&t) < 0) {
			perror("sentinel-adjtimex: adjtimex (offset)");
			return 1;
		}
		memset(&t, 0, sizeof t);
	} else if (argc != 1) {
		fprintf(stderr, "usage: sentinel-adjtimex [set MAXERR_US ESTERR_US OFFSET_NS]\n"
			"  prints the kernel clock's NTP state, or sets it as a time daemon would\n");
		return 2;
	}
	int r = adjtimex(&t);
	if (r < 0) {
		perror("sentinel-adjtimex: adjtimex");
		return 1;
	}
	printf("status %d state %d maxerror %ld esterror %ld offset %ld nano %d\n", t.status, r, t.maxerror,
	       t.esterror, t.offset, (t.status & STA_NANO) ? 1 : 0);
	return 0;
}
