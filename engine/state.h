/* state.h - a world saved to a file, for a restart (sentineld's state
 * file, [engine] state).
 *
 *   header   "SNTLSTAT", u32 format (ES_FORMAT), u32 SN_ABI_VERSION,
 *            u64 payload bytes, u64 FNV-1a-64 of the payload
 *   payload  three parts, each a u64 length, its bytes and zero padding
 *            to 8 bytes: what it belongs to and its sizes (JSON: the
 *            target, its kernel and boot, when it was saved, WdParams,
 *            the block's address), the rules' manifest (bundle.h), the
 *            block (world.h) as of one tick.
 *
 * A file of another format or ABI, truncated or with a wrong checksum is
 * an error that says so; nothing in the block is trusted when it is
 * taken over (eng_restore, wd_adopt).
 *
 * Ownership: an EsSaved owns its bundle (manifest only) and block; es_free.
 */
#ifndef SENTINEL_STATE_H
#define SENTINEL_STATE_H

#include "bundle.h"
#include "world.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_t;

#define ES_MAGIC "SNTLSTAT"
#define ES_FORMAT 1u

/* What a saved world belongs to: the same target running the same boot
 * of the same kernel (es_same_boot). */
typedef struct EsIdent {
	char target[128];         /* sentineld's name for it */
	char release[65];         /* its kernel's */
	uint64_t kaslr;           /* its KASLR slide */
	char boot_id[40];         /* /proc/sys/kernel/random/boot_id as read from its RAM; "" if not yet made */
	uint64_t jiffies;         /* jiffies_64 when it was saved */
} EsIdent;

typedef struct EsSaved {
	EsIdent id;
	int64_t wall_ns;          /* CLOCK_REALTIME of the block's last tick */
	Bundle *b;                /* the rules that made it: their manifest */
	WdParams p;
	void *block;
	size_t len;
	uint64_t base;            /* the address the block's pointers pointed into */
	struct json_t *starts;    /* es_write's starts (owned), or NULL */
} EsSaved;

/* Write atomically (a temporary file beside path, fsync, rename, the
 * directory's fsync).  Returns 0 or -errno with err set. */
/* manifest: bd_manifest_json's of the rules that made the block; starts:
 * the startsAt of its firing alerts by labels (nt_firing_starts), or NULL. */
int es_write(const char *path, const EsIdent *id, int64_t wall_ns, const char *manifest, const WdParams *p,
	     const void *block, size_t len, uint64_t base, const struct json_t *starts, char *err, size_t n);
/* Read and check one: -ENOENT when there is none. */
int es_read(const char *path, EsSaved **out, char *err, size_t n);
void es_free(EsSaved *s);

/* Whether now (read from the target a moment ago) is the boot that was
 * saved, gap_ns of real time later: the same kernel and slide, the same
 * boot id where both have one, and jiffies that went on (no more than a
 * 1000 Hz kernel's jiffies in the gap, and not back).  why says which
 * differs. */
bool es_same_boot(const EsIdent *saved, const EsIdent *now, uint64_t gap_ns, char *why, size_t n);

#endif
