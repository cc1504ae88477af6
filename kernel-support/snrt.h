/* snrt.h - the evaluation runtime shared by the GPU, the CPU backend and
 * the host loader.
 *
 * A compiled rule set (a bundle) is the metric library, this runtime and
 * the code rulec generates for the rules, linked into one module.  The
 * engine runs it tick by tick:
 *
 *   collect   job j computes one metric (for the host, for every CPU) or
 *             walks the task list, writes the value tables and pushes the
 *             samples that windows need into their history rings;
 *   evaluate  rule i computes its condition, its clear condition and its
 *             value from the tables, and steps its alert state machine,
 *             which writes alert records into the ring buffer.
 *
 * On the GPU one persistent kernel does this forever on the GPU's own clock,
 * one warp per job and per rule (sn_gpu_main); on the host one thread calls
 * sn_tick.  Everything the runtime touches hangs off one sn_world, laid out
 * by the host (engine/world.c) in memory both sides can address.
 *
 * Layout rules: fixed-width fields only, pointers are 8 bytes on both
 * targets, so the struct is the same for x86-64 and nvptx64.
 * Freestanding C.
 */
#ifndef SENTINEL_SNRT_H
#define SENTINEL_SNRT_H

#include <stdint.h>

/* The metric library's "not applicable here" (a cgroup without the
 * controller, an interface that is not a bond: KM_ABSENT in
 * kmetric_int.h): a NaN with these bits, unknown but not a read error. */
#define SN_ABSENT_BITS 0x7ff80000000005e1ull

#define SN_ABI_VERSION 20u
/* words of sn_world.sync */
#define SN_SYNC_N 12u

/* ---- alert records: the ring buffer -------------------------------------- */

typedef enum {
	SN_EV_PENDING = 1,    /* the condition holds, `for` not yet met */
	SN_EV_FIRING = 2,
	SN_EV_RESOLVED = 3,
	SN_EV_CANCELLED = 4,  /* pending, then the condition stopped holding */
} SnEventKind;

/* One record: 64 bytes.  `seq` is written last (after a system fence): the
 * reader takes a record whose seq is its position + 1, and re-reads seq
 * after copying it to catch a record being overwritten. */
/* An object's name (a disk's, a cgroup's path), NUL included; also the
 * room for the entity's name in an alert record. */
#define SN_OBJ_NAME 256u

typedef struct sn_alert {
	uint64_t seq;
	uint64_t time_ns;     /* engine clock (GPU globaltimer or host monotonic) */
	uint32_t rule;
	uint32_t kind;        /* SnEventKind */
	double value;         /* the rule's value when the event happened */
	int64_t entity;       /* CPU number or PID the alert is about; -1: the host */
	uint64_t tick;        /* tick number */
	char comm[SN_OBJ_NAME]; /* the task's name when entity is a PID, the object's for an object, else "";
			       * a mount's: "MOUNTPOINT\0FSTYPE\0DEVICE\0", the labels while they fit */
} sn_alert;

typedef struct sn_ring {
	uint64_t head;        /* next record to reserve (producers, atomically) */
	uint64_t tail;        /* next record the host will read (host writes) */
	uint64_t dropped;     /* records lost because the ring was full */
	uint32_t cap;         /* records; a power of two */
	uint32_t _pad;
	sn_alert rec[];
} sn_ring;

/* ---- per-tick statistics, read by the host ---------------------------------- */

#define SN_STAT_JOBS 64

typedef struct sn_stats {
	uint64_t ticks;            /* ticks completed */
	uint64_t late;             /* ticks that started more than one tick late */
	uint64_t last_tick_ns;     /* when the last tick started */
	uint64_t last_tick_len_ns; /* how long it took */
	uint64_t max_tick_len_ns;
	uint64_t read_errors;      /* metric values that could not be read */
	uint64_t heartbeat;        /* the persistent kernel is alive */
	uint32_t stop;             /* host -> GPU: leave the loop */
	uint32_t stopped;          /* GPU -> host: left it */
	uint64_t handoff_tick;     /* reload: the old kernel stops after this tick */
	uint64_t first_tick;       /* the first tick this engine ran, and when */
	uint64_t first_tick_ns;
	uint32_t doorbell;         /* GPU -> host: the ring's head (low bits) at the end of the last tick;
				    * the host's stream waits on it to be woken for alerts (gpu_arm) */
	uint32_t tasks;            /* rows of the last tick */
	uint32_t tasks_found;      /* tasks the target had then: more than the table is a full table */
	int32_t task_err;          /* the last tick's task walk error (KX_*), 0 none */
	/* the last tick on the GPU, phase by phase (µs): SN_PH_* */
	uint32_t phase_us[6];
	/* the last tick on the GPU, job by job (µs; the first SN_STAT_JOBS):
	 * the jobs phase lasts as long as its slowest job */
	uint32_t job_us[SN_STAT_JOBS];
	/* the last tick on the GPU: its slowest rule (or part of one), and
	 * how long it took (µs): the rules phase lasts as long */
	uint32_t slow_rule, slow_rule_us;
	/* ... and the warps a rule over tasks had (sn_eval_parts; 1: one) */
	uint32_t rule_parts, _pad_rp;
	/* each object kind (SN_OBJ_*): how many the last walk found, and its
	 * error (KX_*; -34 KX_ERANGE: more than the table's slots) */
	uint32_t objs_found[8];
	int32_t objs_err[8];
	/* the fleet kernel (sn_gpu_fleet): ticks this target's group had no
	 * time left for (each also late), and ticks that took longer than the
	 * target's share of its group's tick (sn_fleet.share_ns) */
	uint64_t skipped;
	uint64_t over_share;
	/* the read budget (kx.h, kx_cur): the last tick's reads of the
	 * target, the most one tick read, and the ticks cut off at the budget */
	uint64_t reads;
	uint64_t max_reads;
	uint64_t over_budget;
} sn_stats;

/* sn_stats.phase_us: the jobs (and finding the tasks), the PID tree's leaf
 * slots, the rows' slots, the rows' task metrics, the rules */
enum { SN_PH_JOBS, SN_PH_SCAN, SN_PH_SLOTS, SN_PH_FIELDS, SN_PH_RULES, SN_PH_OBJS, SN_PH__COUNT };
_Static_assert(SN_PH__COUNT <= 6, "sn_stats.phase_us");

/* ---- alert state of one rule ----------------------------------------------- */

typedef enum { SN_INACTIVE = 0, SN_PENDING = 1, SN_FIRING = 2,
	       SN_DISABLED = 3 /* a metric it reads is unavailable on this target */ } SnPhase;

typedef struct sn_rstate {
	uint32_t phase;
	uint32_t mofn_count;       /* true ticks among the last n */
	uint64_t true_since;       /* the condition has held since (0: it does not) */
	uint64_t clear_since;      /* the clear condition has held since */
	uint64_t fired_at;
	uint64_t evals, unknown;   /* ticks evaluated; of them, unknown (a read error) */
	double value;              /* last value */
	double cond;               /* last condition: 1, 0, or NaN (unknown) */
	int64_t entity;            /* the entity that gave the last value (CPU, PID or -1) */
	int64_t ev_entity;         /* the entity the pending or firing alert is about: its */
	char ev_comm[SN_OBJ_NAME]; /* resolved/cancelled event names the same one */
	uint32_t mofn_pos, _pad;
	uint64_t mofn[16];         /* the last n (<= 1024) ticks, one bit each */
} sn_rstate;

/* A rule's constants; rulec bakes them into the rule's code. */
/* rule_from's flag: the same rule by group and name, changed (wd_link). */
#define SN_FROM_CHANGED 0x40000000

typedef struct sn_rdesc {
	uint64_t for_ns;
	uint64_t clear_for_ns;
	uint32_t m_of, n_of;       /* n_of > 0: fire when true in m_of of the last n_of ticks */
	uint32_t has_clear;
	int32_t pid_slot;          /* rules over tasks: the task slot of task.pid; the entity
				    * sn_step gets is then a task row; -1 otherwise */
	uint32_t obj;              /* rules over objects: 1 + the kind (SN_OBJ_*); the entity
				    * sn_step gets is then an object slot; 0 otherwise */
	uint32_t vec;              /* a per-entity rule: 1 + the SnEntity its alerts are about
				    * (sn_ent_put, sn_ent_end); 0: one alert (sn_step) */
} sn_rdesc;

/* ---- per-entity alerts ---------------------------------------------------------
 *
 * A rule whose expression is a vector over one kind of entity (every CPU,
 * task, disk, interface, filesystem or cgroup; no any() or all() around
 * it) raises one alert per entity, as Prometheus raises one per series:
 * each entity has its own pending, firing and `for:` timers.  An entity
 * takes a state (an sn_estate of its rule's table) when its condition
 * first holds, keeps it while it is pending, firing or counting M of N,
 * and gives it back when its alert ends, or when the entity is gone (a
 * task that exited, a disk removed: its alert resolves).  The table has
 * max_alerts states; an entity that holds when none is left has no alert
 * of its own, and the rule's own state (sn_rstate) is then its overflow
 * alert: entity SN_ENT_OVERFLOW, value the number of such entities.
 * Memory per rule: max_alerts x sizeof(sn_estate) + 4 bytes per slot of
 * the kind (CPUs, task table rows, object slots) + 4 x max_alerts. */
#define SN_ENT_OVERFLOW (-2)

typedef struct sn_estate {
	uint64_t key;              /* the entity: its task_struct or object address, or CPU + 1; 0: free */
	uint64_t seen;             /* the tick (+ 1) it was last evaluated */
	double cond, clear, value; /* that tick's */
	uint32_t slot;             /* its stable slot (CPU, task slot, object slot): etab.emap's index */
	uint32_t row;              /* that tick's row (a task's), or its slot */
	sn_rstate st;
} sn_estate;

typedef struct sn_etab {
	uint32_t cap;              /* states (the rule's max_alerts); 0: not a per-entity rule */
	uint32_t nslots;           /* emap's entries */
	uint32_t nfree;            /* free[0..nfree-1] */
	uint32_t nclaim;           /* this tick's claims on free[] (atomic) */
	uint32_t overflow;         /* this tick's entities that held with no state left (atomic) */
	uint32_t last_overflow;    /* the last tick's */
	uint32_t npending, nfiring; /* the last tick's */
	sn_estate *e;              /* [cap] */
	int32_t *emap;             /* [nslots] the state of the entity in slot s, -1 none */
	uint32_t *free;            /* [cap] */
} sn_etab;

/* ---- history rings for windowed functions ------------------------------------ */

typedef struct sn_sample {
	uint64_t t;
	double v;
} sn_sample;

/* A downsampled history keeps one bucket per `stride_ns` of time (buckets
 * are aligned to multiples of the stride): its first and last sample as
 * they were, and the min, max, sum, count and changes of all its samples.
 * 64 bytes.  NaN (unknown) samples are first/last values as they came and
 * count as changes, but not in min, max, sum or n. */
typedef struct sn_bucket {
	uint64_t t0, t1;           /* its first and last sample's time */
	double v0, v1;             /* its first and last sample */
	double min, max, sum;      /* over its known samples (min/max NaN if none) */
	uint32_t n;                /* known samples */
	uint32_t changes;          /* value changes between its consecutive samples */
} sn_bucket;

/* History slot h keeps, for each entity, `cap` items of one metric: with
 * stride_ns == 0 a sample per tick (sn_sample), else a bucket per stride
 * (sn_bucket).  A window is known once the history reaches back to its
 * start (within slack_ns); its newest end is always this tick's sample.
 * Downsampled, rate() and delta() use two real samples at their real times
 * (exact over the span they cover) and min/max/avg/changes are exact over
 * the buckets taken; the window's old end lies within slack_ns plus one
 * tick of its nominal place (docs/rules.md, "Windows and their memory"). */
/* History kinds: the host, CPUs, task slots, then object kind k
 * (sn_objs) as SN_ENT_OBJ + k. */
typedef enum { SN_ENT_HOST, SN_ENT_CPU, SN_ENT_TASK, SN_ENT_OBJ } SnEntity;

/* An ends-only history's newest sample and its window's old end, per
 * entity (one line holds two): the tick's push writes it and rate(),
 * delta() and increase() over the history's own window read only it.
 * (t0, v0) is a copy of the oldest item inside that window, kept while it
 * stays inside (the push moves it on); t0 > t: none kept (the history
 * does not reach past the window yet). */
typedef struct sn_head {
	uint64_t t;                /* the newest sample */
	double v;
	uint64_t t0;               /* the window's old end */
	double v0;
} sn_head;

/* A double-double: hi + lo, |lo| at most half an ulp of hi (sn_dd_*,
 * snrt_hist.c).  Sums kept this way lose nothing that a later
 * subtraction of the same term would have to get back. */
typedef struct sn_dd {
	double hi, lo;
} sn_dd;

/* The running aggregates of entity e's history over one window a rule
 * reads it with (trk_win[j]: at most SN_TRKS windows a history): every
 * item that starts inside it, from ring position `lo` on, `items` of
 * them.  The
 * push adds the new item (or the sample merged into the newest bucket)
 * and takes out the items that left the window (or that the ring is
 * about to overwrite), so that a window function reads the answer
 * instead of walking the items (sn_window).  The fit's sums are over
 * each item's mean time in seconds from `origin`.  The largest and the
 * smallest item of the window are the first of two deques of ring
 * positions, H->dq[j][e][0] and [1] (each cap bytes: cap is at most 256),
 * decreasing (max) and increasing (min) in value: first entry and
 * length below.  96 bytes, and 2 cap for the deques. */
#define SN_TRKS 4u
typedef struct sn_trk {
	uint16_t lo;               /* the oldest item inside the window: its ring position */
	uint16_t items;            /* items inside (0: none yet) */
	uint16_t kitems;           /* ... with a known sample: points of the line */
	uint16_t huge;             /* ... whose sum is infinite or past 1e290 (a cgroup's
				    * "max" is +Inf): not in the sums, which they would
				    * turn to NaN for good; avg and the line walk while
				    * one is inside */
	uint32_t n;                /* known samples inside */
	uint32_t changes;          /* changes inside: the items' own and between them */
	uint16_t q0[2], qn[2];     /* deque d (0 max, 1 min): first entry, entries */
	uint64_t origin;           /* ns */
	sn_dd sum;                 /* of the known samples */
	sn_dd nm, nmm, msum;       /* of n m, n m^2 and m sum, m an item's mean time (s from origin) */
} sn_trk;
_Static_assert(sizeof(sn_trk) == 96, "sn_trk: 96 bytes");

/* An ends-only history (head != NULL) is a downsampled one for a metric
 * that only rate(), delta() and increase() read: its items are each
 * stride's first sample (sn_sample, 16 B), and its newest sample and its
 * window's old end are in head[entity]. */
typedef struct sn_hist {
	uint32_t cap;
	uint32_t entities;         /* 1 (host), max CPUs, or task slots */
	uint32_t kind;             /* SnEntity */
	uint32_t _pad;
	uint64_t stride_ns;        /* 0: a sample every tick; else the bucket width */
	uint64_t slack_ns;         /* half the spacing of items: window edges */
	uint64_t win_ns;           /* the longest window over it: head's */
	double stride_inv;         /* 1 / stride_ns (sn_stride_of) */
	union {
		sn_sample *ring;   /* [entities][cap], stride_ns == 0 or ends-only */
		sn_bucket *bkt;    /* [entities][cap], stride_ns > 0 */
	};
	uint32_t *pos;             /* [entities]: next write index */
	uint32_t *len;             /* [entities]: items held */
	sn_head *head;             /* [entities], ends-only; else NULL */
	uint32_t ntrk;             /* trackers: one a window rules read it with (none ends-only) */
	uint32_t _pad2;
	uint64_t trk_win[SN_TRKS]; /* their windows, ns */
	sn_trk *trk[SN_TRKS];      /* [entities] each */
	uint8_t *dq[SN_TRKS];      /* [entities][2][cap] each: their deques */
} sn_hist;

/* The task table: rows in walk order for this tick, and a stable slot per
 * task (keyed by its task_struct address) for histories.  The address ->
 * slot map is rebuilt each tick from the last one (two maps, alternating). */
typedef struct sn_tasks {
	uint32_t cap;              /* rows, and slots */
	uint32_t n;                /* rows this tick */
	int32_t err;               /* walk error this tick (KX_*), 0 if none */
	uint32_t map_cap;          /* each map's size: a power of two >= 2 cap */
	uint64_t *ptr;             /* [cap] task_struct address of row r */
	uint32_t *slot;            /* [cap] stable slot of row r */
	uint32_t *pid;             /* [cap] the PID the scan found row r's task by (the tree's
				    * index, checked against the task's tgid); unset when by_list */
	char (*comm)[16];          /* [cap] */
	/* [cap] by slot: the slot's task's signal_struct, fixed for the task's
	 * life, so read once, not every row (sn_task_signal) */
	struct sn_tsig *sig;
	double *val;               /* [ntaskslots][cap] task metric values */
	uint64_t *key[2];          /* [map_cap] task address, 0 = empty */
	uint32_t *mslot[2];        /* [map_cap] its slot (top bit: taken this tick) */
	uint32_t *free_slots;      /* [cap] stack of free slots */
	uint32_t nfree;            /* (read as signed while slots are taken in parallel) */
	uint32_t cur;              /* which map is this tick's */
	/* this tick's find (sn_tasks_find): tasks found so far (may pass cap),
	 * and the PID tree's leaves queued in the world's tq */
	uint32_t found;
	uint32_t nleaves, leaf0;   /* the nodes queued: leaves, or (level 6) their parents */
	uint32_t by_list;          /* 1: the tree did not check out, the list was walked */
	uint32_t level;            /* the queued nodes' shift: 0 leaves; 6 on the GPU, whose
				    * scan reads their leaves with every thread (sn_tp_scan) */
	/* the signal cache's epoch: moved on when the tasks were not walked
	 * for more than two ticks (failed walks, a stopped kernel), which
	 * forgets every kept signal; and when they last were (w->now) */
	uint32_t sig_epoch;
	uint64_t sig_walked;
} sn_tasks;

/* A slot's kept signal_struct (km_task_signal): valid for the PID it was
 * read for (0: none) in its epoch; 16 bytes, one load */
typedef struct sn_tsig {
	uint64_t sig;
	uint32_t pid, epoch;
} sn_tsig;

/* Objects: kernel objects of one kind (SN_OBJ_*: disks) found by a walk
 * every tick.  Each keeps a stable slot while it exists (keyed by its
 * kernel address), so its histories stay its own; a slot freed by an
 * object that went away is given to the next new one with its histories
 * emptied.  Rules range over the slots present this tick, as over online
 * CPUs, and an alert names the object by its name. */
#define SN_OBJ_KINDS 5u              /* rulec's ENT_NOBJ: entity.def's objects, in order */
enum { SN_OBJ_DISK, SN_OBJ_CGROUP, SN_OBJ_NET, SN_OBJ_FS, SN_OBJ_EDAC };
_Static_assert(SN_OBJ_KINDS <= 8, "sn_stats.objs_found");
#define SN_OBJ_COLS 64u
/* An object's strings: string 0 is its name (SN_OBJ_NAME bytes, every
 * kind); a mount (SN_OBJ_FS) has two labels more, kept with its name in
 * sn_objs.label: its filesystem type ("ext4", /proc/mounts' third column:
 * SN_FS_TYPE bytes) and its device ("/dev/vda1", the first column:
 * SN_FS_DEVICE bytes), NUL-terminated, cut to fit. */
enum { SN_STR_NAME, SN_STR_FSTYPE, SN_STR_DEVICE, SN_STR__COUNT };
#define SN_FS_TYPE 16u
#define SN_FS_DEVICE 128u
#define SN_OBJ_LABEL (SN_FS_TYPE + SN_FS_DEVICE)   /* a slot's labels */
typedef struct sn_objs {
	uint32_t cap;              /* slots */
	uint32_t nslots;           /* value columns: the kind's metrics the rules read */
	uint32_t hi;               /* slots 0..hi-1 may be present this tick */
	uint32_t found;            /* objects the last walk found: more than cap is a full table */
	int32_t err;               /* the last walk's error (KX_*), 0 none */
	uint64_t col_off;          /* bit i: column i's metric is unavailable on this target */
	int32_t hist[SN_OBJ_COLS]; /* column i's history, -1 none */
	uint64_t *key;             /* [cap] the object in slot s (kernel address), 0 free */
	uint64_t *walk;            /* [cap] this tick's walk, in walk order */
	uint8_t *on;               /* [cap] present this tick (2: new this tick) */
	char (*name)[SN_OBJ_NAME]; /* [cap] its name, read this tick */
	char (*label)[SN_OBJ_LABEL]; /* [cap] its labels, read with its name (SN_OBJ_FS: fstype, device);
				    * 0 for a kind without labels */
	double *val;               /* [nslots][cap] by slot */
} sn_objs;

/* String f (SN_STR_*) of slot s, present or not, and its room in bytes
 * (*size, NUL included); 0 where the kind has no such string.  For the
 * runtime and for the host's copies of the tables alike (alert labels:
 * a mount's mountpoint, device and fstype). */
static inline const char *sn_objs_str(const sn_objs *O, uint32_t f, uint32_t s, uint32_t *size)
{
	if (s >= O->cap)
		return 0;
	if (f == SN_STR_NAME) {
		*size = SN_OBJ_NAME;
		return O->name[s];
	}
	if (!O->label || (f != SN_STR_FSTYPE && f != SN_STR_DEVICE))
		return 0;
	*size = f == SN_STR_FSTYPE ? SN_FS_TYPE : SN_FS_DEVICE;
	return O->label[s] + (f == SN_STR_FSTYPE ? 0 : SN_FS_TYPE);
}

/* Everything one running bundle uses.  The host allocates and fills it;
 * the counts come from the bundle's manifest and the target. */
typedef struct sn_world {
	uint32_t abi;              /* SN_ABI_VERSION */
	uint32_t nrules, njobs;
	uint32_t nhost, ncpuslots, ntaskslots, nhist;
	uint32_t max_cpus;
	uint64_t tick_ns;
	uint64_t now;              /* this tick's start */
	uint64_t tick;             /* this tick's number */
	uint32_t ncpus;            /* CPU ids read this tick (nr_cpu_ids, capped) */
	uint32_t _pad;
	double *host;              /* [nhost] */
	double *cpu;               /* [ncpuslots][max_cpus] */
	uint8_t *cpu_on;           /* [max_cpus] online this tick */
	sn_tasks tasks;
	sn_hist *hist;             /* [nhist] */
	sn_rstate *rstate;         /* [nrules] */
	sn_ring *ring;
	sn_stats *stats;
	uint64_t *scratch;         /* [tasks.cap] task_struct addresses from the walk */
	uint64_t *tq;              /* [2 tq_cap] the PID tree's nodes: (address, first PID) */
	uint32_t *tq_ctr;          /* [2] km_pid_leaves' queue length and first leaf */
	uint32_t tq_cap;
	uint32_t has_tasks;        /* the bundle's task job runs: the task phases run */
	uint64_t *sync;            /* [SN_SYNC_N] the grid barrier, stop, this tick's ring reservations (snrt_int.h) */
	uint8_t *job_off;          /* [njobs] 1: the job's metric is unavailable here */
	/* reload: the world this one takes over from, and what maps to what */
	const struct sn_world *from;
	int32_t *rule_from;        /* [nrules] the old rule whose state carries over, -1 none;
				    * | SN_FROM_CHANGED: its expression changed (its M-of-N ticks start over) */
	int32_t *hist_from;        /* [nhist] the old history of the same metric, -1 none */
	uint32_t tasks_from;       /* 1: take over the task table (same capacity) */
	uint32_t task_job;         /* 1 + the task job's index (the GPU runs it first), 0 none */
	/* the tick's reads of the target so far, and the most it may read
	 * (kx.h, kx_cur; 0: no budget) */
	uint64_t reads;
	uint64_t read_budget;
	sn_objs objs[SN_OBJ_KINDS];
	sn_etab *etab;             /* [nrules]: the per-entity rules' states (cap 0: another rule) */
	/* a restart (sentineld's state file): w->from is a saved world, on
	 * another clock.  from_saved 1: the handoff moves its times by
	 * from_shift; 2: the GPU kernel first sets from_shift to
	 * sn_clock() - from_gap_ns - from->now (from_gap_ns: the real time
	 * from the saved world's last tick to the upload), then 1.  Its
	 * stats are not looked at: the kernel starts its schedule now. */
	uint32_t from_saved, _pad3;
	int64_t from_shift;
	uint64_t from_gap_ns;
	/* a rule in parts (sn_eval_parts): rule r < npart_rules meets its
	 * other parts' warps in its rows of part_buf (two rounds of up to
	 * SN_MEET_VALS partials a part), counting in at part_arrive[r]
	 * (zeroed each tick) */
	double *part_buf;          /* [npart_rules][2][SN_MEET_VALS][SN_PARTS_MAX] */
	uint32_t *part_arrive;     /* [npart_rules] */
	uint32_t *part_list;       /* [npart_rules] this tick's rules that run in parts (the GPU's jobs phase) */
	uint32_t npart_rules, npart_split;   /* ... and how many */
} sn_world;

/* A rule over tasks on the GPU runs on up to SN_PARTS_MAX warps, each
 * taking every parts-th 32 rows, when the task phases' warps outnumber
 * the rules (snrt.c, sn_eval_parts); rule sets of more than
 * SN_PART_RULES rules run a warp a rule. */
#define SN_PARTS_MAX 32u
#define SN_PART_RULES 512u
#define SN_MEET_VALS 8u            /* values the parts exchange at one meeting */

/* ---- what rulec generates (declared here, defined per bundle) ------------------- */

void rules_collect(sn_world *w, uint32_t job);
void rules_eval(sn_world *w, uint32_t rule);
/* task.pid of row (the task at task): the scan's, else read (snrt.c) */
double sn_task_found_pid(const sn_world *w, uint32_t row, uint64_t task);
/* its signal_struct: kept with its slot where the scan found it by PID,
 * else read (snrt.c) */
uint64_t sn_task_signal(sn_world *w, uint32_t row, uint64_t task);
/* 1 when rule's code may run in parts (it loops over entities, and meets
 * its other parts only outside its loops); 0 for a warp of its own */
uint32_t rules_split(sn_world *w, uint32_t rule);
/* Every task metric the rules read, for one row (one lane), then
 * rules_task_derive: the windows the rules take over task metrics, into
 * the task slots after the metrics. */
void rules_task_row(sn_world *w, uint32_t row);
void rules_task_derive(sn_world *w, uint32_t row);
/* Every metric the rules read of object `slot` of kind `kind` (a disk, a
 * cgroup, an interface) present this tick, for a warp (its reads are
 * warp-collective); after the jobs found the objects, the objects' rows
 * are spread over every warp (sn_obj_rows). */
void rules_obj_row(sn_world *w, uint32_t kind, uint32_t slot);
/* From the metric library (kernel-support/kmetric_*.c): the name of the task
 * at kernel address task, read now; < 0 on a read error. */
int km_task_comm(uint64_t task, char *out16);
/* The tasks: the PID tree (warp-collective; then one lane per slot), and
 * the task list where the tree fails (lane 0 walks). */
int km_pid_leaves(uint64_t *q, uint32_t cap, uint32_t *ctr, uint32_t stop, uint32_t *level);
uint64_t km_pid_leaf(uint64_t twig, uint32_t slot, int *bad);
double km_task_pid(uint64_t t);
uint64_t km_task_signal(uint64_t t);
uint64_t km_pid_task(uint64_t leaf, uint32_t slot, uint64_t nr, uint32_t *tgid);
int km_task_walk(uint64_t *out, uint32_t cap);
/* Objects (one lane): kind k's walk, at most cap addresses into out; the
 * number found (may pass cap), or < 0 on a read error; and one object's
 * name (NUL-terminated, SN_OBJ_NAME bytes). */
int km_disk_walk(uint64_t *out, uint32_t cap);
int km_disk_name(uint64_t disk, char *out32);
int km_cgroup_walk(uint64_t *out, uint32_t cap);
int km_cgroup_name(uint64_t cgroup, char *out, uint32_t size);
int km_net_walk(uint64_t *out, uint32_t cap);
int km_net_name(uint64_t dev, char *out, uint32_t size);
int km_fs_walk(uint64_t *out, uint32_t cap);
int km_fs_name(uint64_t mount, char *out, uint32_t size);
int km_edac_walk(uint64_t *out, uint32_t cap);
int km_edac_name(uint64_t mci, char *out, uint32_t size);
/* A mount's labels (one lane): its filesystem type and its device,
 * NUL-terminated in size bytes. */
int km_fs_fstype(uint64_t mount, char *out, uint32_t size);
int km_fs_device(uint64_t mount, char *out, uint32_t size);

/* ---- the runtime: called by the generated code ----------------------------------- */

/* Collection: store values (and feed their history, if any: hist < 0 none). */
void sn_put_host(sn_world *w, uint32_t slot, int32_t hist, double v);
void sn_put_cpu(sn_world *w, uint32_t slot, int32_t hist, uint32_t cpu, double v);
void sn_put_task(sn_world *w, uint32_t slot, int32_t hist, uint32_t row, double v);
/* A derived task value (a window): stored, no history, no read error. */
void sn_set_task(sn_world *w, uint32_t slot, uint32_t row, double v);
/* The task job (one warp): find this tick's tasks, the PID tree's leaves
 * for the phases after it to read, or the task list where the tree does
 * not check out.  Then, over every thread (sn_tick, sn_gpu_main): the
 * leaves' tasks, the rows and their stable slots, and rules_task_row for
 * each row. */
void sn_tasks_find(sn_world *w);
/* For fed tasks (sn_feed_tick): w->scratch holds n keys; make the rows and
 * slots as a tick would.  Returns the row count. */
uint32_t sn_tasks_begin(sn_world *w, int walked);
/* The CPU job (job 0 when any rule reads per-CPU metrics): record nr_cpu_ids
 * and which CPUs are online, from lanes that each checked some CPUs. */
void sn_cpus_set(sn_world *w, uint32_t ids);
void sn_cpu_set_online(sn_world *w, uint32_t cpu, int online);

/* An object job (one warp): find kind k's objects this tick, give each
 * its slot, read their names.  The job then reads every metric of the kind
 * the rules need, object by object (sn_obj_key), and stores the object's
 * values, vals[column], with sn_put_objs: the lanes store and feed the
 * histories of a column each, side by side. */
void sn_objs_find(sn_world *w, uint32_t k);
uint64_t sn_obj_key(const sn_world *w, uint32_t k, uint32_t s);
void sn_put_objs(sn_world *w, uint32_t k, uint32_t s, const double *vals);

/* The task job's buffers. */
uint64_t sn_task_ptr(const sn_world *w, uint32_t row);
char *sn_task_comm_buf(sn_world *w, uint32_t row);

/* Evaluation: read the tables. */
double sn_host(const sn_world *w, uint32_t slot);
double sn_cpu(const sn_world *w, uint32_t slot, uint32_t cpu);
double sn_task(const sn_world *w, uint32_t slot, uint32_t row);
/* A task slot's column ([tasks.cap] values, row-indexed); 0 for no such slot. */
const double *sn_task_col(const sn_world *w, uint32_t slot);
int sn_cpu_on(const sn_world *w, uint32_t cpu);
uint32_t sn_ncpus(const sn_world *w);
uint32_t sn_ntasks(const sn_world *w);
int64_t sn_task_pid(const sn_world *w, uint32_t row, uint32_t pid_slot);
/* task.comm == s (len bytes) */
int sn_task_comm_eq(const sn_world *w, uint32_t row, const char *s, uint32_t len);
/* task.comm =~ a pattern, as a DFA (rulec/rx.h: cls[256], next[states *
 * nclass] with 0xffff for no match, accept[states]); 0 for no such row */
int sn_task_comm_match(const sn_world *w, uint32_t row, const uint8_t *cls, const uint16_t *next,
		       uint32_t nclass, const uint8_t *accept);

/* Objects: slots 0..sn_nobjs-1 may be present (sn_obj_on); metric `slot`
 * of object slot s; its string f (SN_STR_*: its name, a mount's fstype or
 * device) == str (len bytes). */
uint32_t sn_nobjs(const sn_world *w, uint32_t k);
int sn_obj_on(const sn_world *w, uint32_t k, uint32_t s);
double sn_obj(const sn_world *w, uint32_t k, uint32_t slot, uint32_t s);
int sn_obj_str_eq(const sn_world *w, uint32_t k, uint32_t f, uint32_t s, const char *str, uint32_t len);
/* its string f =~ a pattern's DFA (as sn_task_comm_match); 0 for a slot not present */
int sn_obj_str_match(const sn_world *w, uint32_t k, uint32_t f, uint32_t s, const uint8_t *cls, const uint16_t *next,
		     uint32_t nclass, const uint8_t *accept);

/* Windowed functions over the history of (hist, entity).  Entity: 0 for
 * host metrics, the CPU number, the task row, or the object slot.  NaN when the window holds
 * fewer samples than the function needs. */
/* SN_W_DERIV: the slope of the least-squares line through the window (per
 * second); SN_W_FIT: that line's value at the newest sample.  Each item is
 * a point at its mean time and mean value, weighted by its samples: exact
 * for samples (no downsampling), and for a line through buckets of evenly
 * spaced samples. */
typedef enum { SN_W_RATE, SN_W_DELTA, SN_W_CHANGES, SN_W_AVG, SN_W_MAX, SN_W_MIN, SN_W_DERIV, SN_W_FIT } SnWinFn;
/* fn | SN_W_PARTIAL: a window the history does not cover yet is what the
 * samples it holds give (two at least), as Prometheus' range is; rate()
 * is then their increase over the whole window's length (a rule's
 * windows: partial) */
#define SN_W_PARTIAL 0x100u
/* fn | SN_W_WALK: walk the window's items even where the history's
 * tracker (sn_trk) holds the answer (test_snrt compares the two) */
#define SN_W_WALK 0x200u
double sn_window(const sn_world *w, uint32_t hist, uint32_t entity, uint32_t fn, double window_s);
/* The oldest of entity e's len items (in time order) whose start t0 lies
 * within lim of t1 (t0n: the newest item's t0), or len - 1 if none before
 * the newest does: rate() and delta()'s old end (snrt_hist.c; exported
 * for test_snrt, which checks it against a binary search). */
uint32_t sn_win_start(const sn_hist *H, uint32_t e, uint32_t len, uint64_t t0n, uint64_t t1, uint64_t lim,
		      uint64_t tick_ns);

/* The alert state machine of rule `rule`: cond and clear are 1, 0 or NaN
 * (unknown: a read error); clear is ignored unless d->has_clear.  entity:
 * the CPU, or (d->pid_slot >= 0) the task row, that gave the value; -1. */
void sn_step(sn_world *w, uint32_t rule, const sn_rdesc *d, double cond, double clear, double value,
	     int64_t entity);

/* A per-entity rule (d->vec): entity ent's verdict this tick, from the
 * lane that evaluated it (ent: the CPU, the task row or the object slot);
 * then, from every lane of the warp, the tick's end: each state steps
 * (its events on the ring), the gone entities' alerts end, the overflow
 * alert steps. */
void sn_ent_put(sn_world *w, uint32_t rule, const sn_rdesc *d, uint32_t ent, double cond, double clear,
		double value);
void sn_ent_end(sn_world *w, uint32_t rule, const sn_rdesc *d);
/* Whether some entity of the rule has a state (read before the puts: the
 * rule's code then puts every entity, else only those that hold). */
int sn_ent_busy(const sn_world *w, uint32_t rule);

/* A rule's code in parts (snrt_rule.c): its entity loops start at
 * sn_row0() and step by sn_rowstep() (lane and lanes when it runs whole),
 * and its sums, minima and maxima over entities go through sn_red_*: the
 * warp's, then every part's (each part's warp meets the others'), the
 * same answer in all.  sn_step and sn_ent_end act in part 0 only, the
 * latter after every part's sn_ent_put. */
uint32_t sn_row0(void);
uint32_t sn_rowstep(void);
double sn_red_sum(double v);
double sn_red_min(double v);
double sn_red_max(double v);
/* v[i] for i < n (at most SN_MEET_VALS) summed, or where bit i of
 * minmask / maxmask is set its minimum / maximum: one meeting for all */
void sn_red_n(double *v, uint32_t n, uint32_t minmask, uint32_t maxmask);
/* A best-entity tracker, kve = {key, value, entity} in each lane: the
 * best key (dir > 0 the largest, else the smallest), then the lowest
 * entity holding it, then its value, in every lane (rulec's
 * cg_track_reduce, in three warp reductions and one meeting) */
void sn_red_track(double *kve, int32_t dir);

/* One tick on one warp of nwarps (the host: 0 of 1). */
void sn_tick(sn_world *w, uint32_t warp, uint32_t nwarps, uint64_t now);
/* The same tick in steps, for T host threads with a barrier after each
 * step: every thread t of T runs step 0, all meet, step 1, ... (the CPU
 * backend with [engine] threads; sn_tick runs them on one). */
enum { SN_STEP_BEGIN, SN_STEP_JOBS, SN_STEP_OBJS, SN_STEP_SCAN, SN_STEP_CLAIM, SN_STEP_RELEASE, SN_STEP_ALLOC, SN_STEP_COMMIT,
       SN_STEP_ROWS, SN_STEP_RULES, SN_STEP_END, SN_STEPS };
void sn_tick_step(sn_world *w, uint32_t step, uint32_t t, uint32_t T, uint64_t now);

/* Values supplied by the host instead of read from a kernel (`rulec test`,
 * replays): one tick's tables.  Host pointers; the CPU backend only. */
typedef struct sn_feed {
	const double *host;        /* [nhost] */
	const int32_t *host_hist;  /* [nhost] the history each slot feeds, -1 none */
	const double *cpu;         /* [ncpuslots][max_cpus] */
	const int32_t *cpu_hist;   /* [ncpuslots] */
	const uint8_t *cpu_on;     /* [max_cpus] */
	uint32_t ncpus;            /* CPU ids */
	uint32_t ntasks;           /* tasks this tick (at most tasks.cap) */
	const uint64_t *task_key;  /* [ntasks] a stable nonzero key per task */
	const char (*task_comm)[16]; /* [ntasks] */
	const double *task;        /* [ntaskslots][task_stride] */
	uint32_t task_stride, _pad;
	const int32_t *task_hist;  /* [ntaskfed] */
	uint32_t ntaskfed;         /* the task metrics' slots; the window slots after them are derived */
	uint32_t _pad2;
	struct sn_feed_objs {
		uint32_t n;                /* objects this tick (at most the kind's cap) */
		uint32_t stride;
		const uint64_t *key;       /* [n] a stable nonzero key per object */
		const char (*name)[SN_OBJ_NAME]; /* [n] */
		const char (*label)[SN_OBJ_LABEL]; /* [n] (SN_OBJ_FS), or 0: none given */
		const double *val;         /* [nslots][stride] */
		const int32_t *hist;       /* [nslots] */
	} objs[SN_OBJ_KINDS];
} sn_feed;

/* One tick at time now on fed values: the tables and histories as the jobs
 * would leave them, then every rule (the host; not in the GPU code). */
void sn_feed_tick(sn_world *w, uint64_t now, const sn_feed *f);

/* Reload: take over w->from's state (the tick count, the alert state of
 * every unchanged rule, the histories of every metric both read, the task
 * table).  Runs between the old world's last tick and this one's first:
 * on the GPU in the new persistent kernel, all warps; on the host in the
 * tick thread. */
void sn_handoff(sn_world *w, uint32_t warp, uint32_t nwarps);

/* ---- the fleet: one persistent kernel over several targets (the GPU) ----------
 *
 * sn_gpu_fleet runs every member's tick, each with its own world, memory
 * description and relocation table (targets of different kernels).  The
 * grid is cut into ngroups groups of group_blocks blocks; member i belongs
 * to group i % ngroups, and a group runs its members' ticks one after the
 * other on its own blocks, with barriers over those blocks only (counters
 * in sync, SN_FLEET_SYNC words a group).  A group whose tick runs out
 * skips its remaining members for that tick (their stats->skipped) rather
 * than fall behind, and its next tick starts with the first it skipped
 * (round robin: each member gets its turn): a hostile or huge target
 * costs its group's others that tick, never the other groups.  Membership is fixed for a launch:
 * the host stops the kernel (ctl->stop) and launches it again with the
 * new members, whose worlds keep their schedules (stats->last_tick_ns). */
#define SN_FLEET_SYNC 4u

typedef struct sn_fleet_member {
	struct sn_world *w;
	const void *mem;           /* its kx_mem (kernel-support/kx.h) */
	const uint64_t *relo;      /* its relocation table */
} sn_fleet_member;

typedef struct sn_fleet_ctl {  /* host-mapped */
	uint32_t stop;             /* host -> GPU: leave after the tick in progress */
	uint32_t stopped;          /* GPU -> host: every group left */
	uint64_t passes;           /* group ticks completed, all groups */
	uint64_t late_passes;      /* group ticks that ran past their tick */
	uint64_t max_pass_ns;      /* the longest group tick */
	uint32_t doorbell;         /* GPU -> host: member ticks that ended with new alert records; the
				    * host's stream waits on it to be woken (gpu_fleet_arm) */
	uint32_t _pad;
} sn_fleet_ctl;

typedef struct sn_fleet {
	uint64_t tick_ns;
	uint64_t share_ns;         /* a member's share of its group's tick (0: no check) */
	uint32_t nmembers, ngroups, group_blocks, _pad;
	sn_fleet_member *m;        /* [nmembers] */
	uint64_t *sync;            /* [ngroups * SN_FLEET_SYNC] */
	sn_fleet_ctl *ctl;
} sn_fleet;

#endif
