/*
 * scenario: the scenario file (scenarios/FORMAT.md is the normative spec) — loading with
 * `file:line:col` errors, defaults, and the expanded writer.
 *
 * Loading. sr_scenario_load parses a JSON scenario with sr_json and checks every object against
 * the key table (sr_scenario_keys): an unknown key, a key of the wrong type, a value out of
 * range, a bad reference (a step name that does not exist), an unknown check, quirk or phase
 * name, or a fault plan the engine would refuse (spec/engine_config.h, sr_spec_parse_faults:
 * parsed whole, so a repeated fault id is refused too) is an error whose message
 * starts with "FILE:LINE:COL: ". Every key that is absent gets its default (FORMAT.md), so the
 * loaded struct says everything the run will do.
 *
 * Key table. sr_scenario_keys lists every key path the loader accepts, with its JSON type.
 * Paths are dotted from the top level; array elements add no component ("budgets.phase" is the
 * `phase` of each `budgets` entry); step keys are "steps.*.<key>" for keys every step kind
 * takes and "steps.<kind>.<key>" for the others. A key of type "map" has free-form member
 * names (endpoint or fault ids) and "plan"/"definition" values are checked by another module
 * (engines.faults by harness/spec/faults.h, inline field definitions by lib/sr_fields.h).
 * The allowed members of an object at path P are exactly the table's entries "P.<name>", so
 * the table and the loader cannot disagree; tests/test_scenario.c checks the table against
 * FORMAT.md (every key documented there is in the table and the reverse).
 *
 * Expanded writer. sr_scenario_write_expanded writes the scenario with every default filled in
 * (every key of the table that applies, in table order) as pretty-printed JSON; loading that
 * file gives the same scenario, so a failure replays byte for byte. sr_scenario_write_engine
 * writes the engine config (harness/spec/engine_config.h, shape 1) that `syncroll engine --config`
 * reads for this scenario.
 *
 * Errors: SR_E_JSON_SYNTAX (not JSON), SR_E_JSON_SCHEMA (unknown key, wrong type, out of range),
 * SR_E_SCENARIO (a rule beyond types: references, combinations, names), SR_E_IO, SR_E_NOMEM.
 * Ownership: a loaded scenario owns everything it points to; free with sr_scenario_free.
 * Thread-safety: a loaded scenario is immutable and may be read by any number of threads.
 */
#ifndef SR_SCENARIO_H
#define SR_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "client/client.h"
#include "spec/endpoints.h"
#include "spec/engine_config.h"
#include "report/result.h"
#include "spec/faults.h"
#include "sr_buf.h"
#include "sr_err.h"
#include "sr_fields.h"

#define SR_SCN_ID_MAX      64  /* id bytes, including the NUL */
#define SR_SCN_NAME_MAX    64  /* step names, including the NUL */
#define SR_SCN_MAX_STEPS   256 /* steps in one scenario */
#define SR_SCN_MAX_LIST    64  /* entries of tags, urls, step-name and check-name lists */
#define SR_SCN_MAX_BUDGETS 64
#define SR_SCN_MAX_BATCH   4096      /* rollouts in one rollout step */
#define SR_SCN_MAX_TIMEOUT 86400000  /* one day, in ms: the longest timeout a scenario may ask */
#define SR_SCN_MAX_FILE    (4 << 20) /* bytes of a scenario file */

/* ---- the key table ---- */

typedef struct sr_scenario_key {
    const char *path; /* "model.vocab", "steps.*.kind", "steps.rollout.batch", ... */
    const char *type; /* "string", "integer", "number", "boolean", "object", "array",
                         "map", "plan", "string|definition", "integer|null", ... */
} sr_scenario_key;

size_t sr_scenario_key_count(void);
const sr_scenario_key *sr_scenario_key_at(size_t i);

/* ---- quirks: switchable legacy behaviours of our own modules (scenarios/bugs/README.md) ---- */

typedef enum sr_quirk {
    SR_QUIRK_RETRY_JSON_DECODE_ONLY = 0, /* client */
    SR_QUIRK_NO_PROMPT_START,            /* client */
    SR_QUIRK_LOCK_FIRST_DTYPE,           /* trace */
    SR_QUIRK_PADDING_AS_CAPTURED,        /* trace */
    SR_QUIRK_SYNTHETIC_EOS_LOSS_ACTIVE,  /* rollout */
    SR_QUIRK_OVERWRITE_TRACE_EACH_TURN,  /* rollout */
    SR_QUIRK_AFFINITY_ERROR_FATAL,       /* pool */
    SR_QUIRK_VPP1_REJECTED,              /* config (sr_replay_config) */
    SR_QUIRK_PREFIX_WITHOUT_QUOTE,       /* splice (through the client) */
    SR_QUIRK_NPY_ASSUME_UINT8,           /* client (vllm's .npy) */
    SR_QUIRK_SGLANG_ROWS_FROM_ZERO,      /* client (sglang) */
    SR_QUIRK_COMMIT_ABORTED_TURN,        /* client (every dialect's abort) */
    SR_QUIRK_STAMP_VERSION_AT_RESPONSE,  /* rollout */
    SR_QUIRK_OMIT_TOP_K,                 /* rollout (generator, client.stack 2086) */
    SR_QUIRK_COUNT
} sr_quirk;

typedef struct sr_quirk_info {
    const char *name;   /* as written in client.quirks */
    const char *module; /* "client", "trace", "rollout", "pool", "config", "splice" */
    const char *bug;    /* bug catalogue id */
} sr_quirk_info;

/* The quirk's description, or NULL outside the enum. */
const sr_quirk_info *sr_quirk_info_of(sr_quirk q);

/* ---- the loaded scenario ---- */

/*
 * The step kinds, as one table: everything a step kind is made of derives from its row. Columns:
 * the name written in a step's "kind"; the symbol of sr_step_kind (SR_STEP_<SYMBOL>); the parser
 * (steps.c) and the writer (write_steps.c) of its members, static functions of those files; and
 * the one-line description that heads its section of scenarios/FORMAT.md §10 (unit.scenario
 * fails until both agree). The enum, the name lookup, the "unknown step kind" message and the
 * parse and write dispatch read the table; the runner's executor array (run/runner_steps.c,
 * which this folder may not name) is checked complete against SR_STEP_KIND_COUNT. A new kind
 * also needs its members: a struct below, the rows "steps.<name>.<member>" of the key table
 * (keys.c) and FORMAT.md.
 */
#define SR_STEP_KIND_TABLE(X)                                                                      \
    X("rollout", ROLLOUT, parse_rollout, write_rollout,                                            \
      "a batch of multi-turn agent-loop rollouts")                                                 \
    X("sync_weights", SYNC_WEIGHTS, parse_sync, write_sync,                                        \
      "publish a weight version and apply it on every engine")                                     \
    X("collate", COLLATE, parse_collate, write_collate, "left-padded collation of routes")         \
    X("pause", PAUSE, parse_pause, write_pause, "the engines' generation pause")                   \
    X("resume", RESUME, parse_resume, write_resume, "the engines' generation pause")               \
    X("wait", WAIT, parse_wait, write_wait, "join async steps, or wait for an engine condition")   \
    X("check_state", CHECK_STATE, parse_check_state, write_check_state,                            \
      "assert an engine's state")                                                                  \
    X("kill_engine", KILL_ENGINE, parse_kill, write_kill, "emulate an engine crash")               \
    X("probe", PROBE, parse_probe, write_probe,                                                    \
      "the metamorphic checks (meta.*) against one engine")                                        \
    X("sleep", SLEEP, parse_sleep, write_sleep, "put the engines to sleep")                        \
    X("wake_up", WAKE_UP, parse_wake, write_wake, "wake the engines' memory")                      \
    X("replay", REPLAY, parse_replay, write_replay,                                                \
      "judge a capture of recorded traffic with no engine")

typedef enum sr_step_kind {
#define SR_STEP_KIND_ENUM(name, sym, parse, write, doc) SR_STEP_##sym,
    SR_STEP_KIND_TABLE(SR_STEP_KIND_ENUM)
#undef SR_STEP_KIND_ENUM
        SR_STEP_KIND_COUNT
} sr_step_kind;

/* "rollout", "sync_weights", ...; NULL outside the enum. */
const char *sr_step_kind_name(sr_step_kind k);

/* The kind named `name`, or -1. */
int sr_step_kind_lookup(const char *name);

/* The one-line description of kind k (the table's last column); NULL outside the enum. */
const char *sr_step_kind_doc(sr_step_kind k);

typedef struct sr_scn_rollout {
    int64_t batch, turns;
    int64_t prompt_min, prompt_max; /* prompt tokens per sample */
    int64_t obs_min, obs_max;       /* observation tokens per turn */
    int64_t max_tokens;             /* sampling_params.max_tokens */
    int multi_turn;                 /* mode "multi_turn" (1) or "single_turn" (0) */
    int routes, logprobs, ignore_eos, append_eos_after_stop, finish_session;
    int sample_support;         /* client.stack "2086": return_sample_support and top_k */
    int64_t max_input_length;   /* 0: no limit */
    int64_t max_rollout_tokens; /* tokens per rollout (trace_opts.max_rows of each rollout) */
    int64_t max_trace_bytes;    /* route-trace bytes per rollout (trace_opts.max_bytes) */
    int32_t stop_ids[SR_SCN_MAX_LIST];
    int n_stop_ids;
} sr_scn_rollout;

typedef struct sr_scn_sync {
    int64_t version; /* target version; -1: the current version + 1 */
    int64_t deadline_ms;
} sr_scn_sync;

typedef struct sr_scn_collate {
    int rollouts[SR_SCN_MAX_LIST]; /* step indices of rollout steps */
    int n_rollouts;
    int explicit_rollouts; /* 0: the default (the last rollout step before this one) */
    int64_t workers;       /* 0: sized by sr_pool_workers(cap, reserved_cores) */
    int64_t cap, reserved_cores;
} sr_scn_collate;

typedef struct sr_scn_pause {
    int64_t engine; /* -1: every engine */
    char mode[8];   /* "keep", "abort", "wait" */
    int clear_cache;
} sr_scn_pause;

typedef struct sr_scn_wait {
    int for_steps[SR_SCN_MAX_LIST]; /* step indices of async steps */
    int n_for;
    int has_for;   /* 0: `for` is null */
    int has_until; /* 0: `until` is null */
    int64_t engine;
    int64_t min_inflight, min_held, min_generate; /* -1: not a condition */
    int64_t timeout_ms, poll_ms;
} sr_scn_wait;

#define SR_SCN_UNCHECKED INT64_MIN

typedef struct sr_scn_fault_count {
    char id[SR_FAULT_ID_MAX];
    int64_t fired;
} sr_scn_fault_count;

typedef struct sr_scn_check_state {
    int64_t engine; /* -1: every engine */
    /* SR_SCN_UNCHECKED: not checked; booleans 0/1 */
    int64_t weight_version, paused, sleeping, sessions, inflight, held;
    int64_t requests[SR_EP_COUNT]; /* by sr_endpoint; SR_SCN_UNCHECKED where not given */
    sr_scn_fault_count faults_fired[SR_FAULT_MAX];
    int n_faults_fired;
} sr_scn_check_state;

typedef struct sr_scn_sleep {
    int64_t engine; /* -1: every engine */
    int64_t level;  /* sleep: 0, 1 or 2 */
    char tags[16];  /* wake_up: "all", "weights" or "kv_cache" */
} sr_scn_sleep;

typedef struct sr_scn_kill {
    int64_t engine;
    int sig;          /* SIGKILL, SIGTERM, SIGSEGV or SIGABRT */
    char sig_name[8]; /* "KILL", ... */
} sr_scn_kill;

/* A probe step: the meta.* relations (run/meta.h) against one engine. */
typedef struct sr_scn_probe {
    int64_t engine;
    int64_t budget; /* generate requests at most */
    int sync;       /* 1: the relations that need weight syncs run too (three syncs) */
} sr_scn_probe;

/* Bytes of a replay step's capture path, including the NUL. */
#define SR_SCN_PATH_MAX 1024

/* A replay step: a capture of `syncroll proxy --record` judged as `syncroll replay` does
 * (run/replay_judge.h). */
typedef struct sr_scn_replay {
    char capture[SR_SCN_PATH_MAX]; /* the capture folder, resolved to an absolute path at load
                                      (a relative one is relative to the scenario's folder) */
    int dialect;                   /* an sr_dialect, or -1: told from the answers */
} sr_scn_replay;

typedef struct sr_scn_step {
    sr_step_kind kind;
    char name[SR_SCN_NAME_MAX];
    int async; /* rollout and sync_weights only */
    int line;  /* line of the step in the file, for messages */
    sr_scn_rollout rollout;
    sr_scn_sync sync;
    sr_scn_collate collate;
    sr_scn_pause pause;
    int64_t resume_engine; /* resume: -1 every engine */
    sr_scn_sleep sleep;    /* sleep and wake_up */
    sr_scn_wait wait;
    sr_scn_check_state check;
    sr_scn_kill kill;
    sr_scn_probe probe;
    sr_scn_replay replay;
} sr_scn_step;

typedef struct sr_scn_budget {
    sr_phase phase;
    double percentile; /* 0..100 */
    double max_ms;
} sr_scn_budget;

typedef struct sr_scenario {
    char *path; /* the file it was loaded from */
    char id[SR_SCN_ID_MAX];
    char *description;
    char *tags[SR_SCN_MAX_LIST];
    int n_tags;
    uint64_t seed;
    int64_t timeout_ms;
    char *skip; /* NULL: run it */
    /* model, weights, emitted fields, engines' timing/server/faults/sample_support_k and the
     * seed, exactly as the engines will be configured */
    sr_engine_config engine;
    /* engines.dialects: bit d set for each dialect the scenario also runs in (0: only
     * engine.dialect); `syncroll run` makes one execution per bit (sr_scenario_for_dialect) */
    unsigned dialects;
    sr_fields *fields;  /* the client's splice registry: built-ins + inline definitions */
    cJSON *fields_json; /* `fields` as written (names and definitions), owned */
    /* engines */
    char *urls[SR_SCN_MAX_LIST]; /* external engines (engines.urls), else none */
    int n_urls;
    int64_t ready_timeout_ms, stop_grace_ms;
    /* weights beyond the engine config */
    char transport[16];  /* "delta" or "broadcast" */
    int transport_given; /* weights.transport was written (else it follows the sync plane) */
    int trainer_api;     /* weights.sync_version (sr_sync_api), -1: engines.sync_version's */
    int serial_update;   /* weights.serial_update: the update phase one engine at a time */
    int64_t workers_cap, workers_reserved;
    /* client */
    sr_client_opts client;
    int64_t concurrency;
    int quirks[SR_QUIRK_COUNT];
    /* pool */
    int64_t pool_cores; /* -1: detect */
    int affinity_fails; /* pool.affinity "error" */
    /* trainer */
    int routing_replay;
    int vpp_set;
    int64_t vpp;
    char role[16];
    /* steps, expectations, budgets */
    sr_scn_step *steps;
    int n_steps;
    sr_verdict expect_verdict; /* PASS or FAIL */
    char *expect_checks[SR_SCN_MAX_LIST];
    int n_expect_checks;
    char *expect_classes[SR_SCN_MAX_LIST];
    int n_expect_classes;
    sr_scn_budget budgets[SR_SCN_MAX_BUDGETS];
    int n_budgets;
    /* soak (FORMAT.md §15): 0 runs the steps once; `syncroll run --duration` overrides it */
    int64_t soak_duration_ms;
    int64_t soak_warmup_iterations;
    int64_t soak_max_fd_growth;
    int64_t soak_max_rss_growth; /* bytes */
} sr_scenario;

/* Loads and validates a scenario file (contract above). *out is freed with sr_scenario_free. */
int sr_scenario_load(sr_scenario **out, const char *path, sr_err *err);

/*
 * sr_scenario_load with another bound on the file's size: max_bytes (0: SR_SCN_MAX_FILE) bounds
 * both the bytes read and the JSON parser's input (`syncroll run/lint --max-scenario-bytes`). A
 * larger file is SR_E_SCENARIO_TOO_LARGE (scenario.too_large) naming the path, its size ("more
 * than" the bound for a stream) and the bound, before anything is parsed. sr_scenario_load and
 * sr_scenario_parse use SR_SCN_MAX_FILE and fail alike.
 */
/*
 * Makes s the execution of its matrix (engines.dialects) in dialect d: engine.dialect = d, and
 * the id gains ".<dialect>" unless d is the dialect the file names (engines.dialect, default
 * skyrl), so that execution keeps the plain id. SR_E_SCENARIO when the id would pass
 * SR_SCN_ID_MAX - 1 bytes.
 */
int sr_scenario_for_dialect(sr_scenario *s, sr_dialect d, sr_err *err);

int sr_scenario_load_max(sr_scenario **out, const char *path, size_t max_bytes, sr_err *err);

/* The same from text in memory; `name` names it in messages. */
int sr_scenario_parse(sr_scenario **out, const char *text, size_t len, const char *name,
                      sr_err *err);

void sr_scenario_free(sr_scenario *s);

/*
 * Overrides the seed (syncroll run --seed): the scenario's seed, the engines' seed and the
 * client's jitter seed.
 */
void sr_scenario_set_seed(sr_scenario *s, uint64_t seed);

/* Bytes an engine process needs beyond its copies of the weights (code, HTTP buffers). */
#define SR_SCN_ENGINE_OVERHEAD ((uint64_t)32 << 20)
/* Bytes the trainer side needs beyond its copies of the weights. */
#define SR_SCN_TRAINER_OVERHEAD ((uint64_t)64 << 20)

/*
 * The failure evidence a rollout keeps until it is judged (harness/run/rollout.h, evidence.h):
 * the exchanges of its last SR_SCN_EVIDENCE_TURNS turns, each response at most
 * SR_SCN_EVIDENCE_RESPONSE_BYTES, each request whole (at most the engine's max_body_bytes, and
 * about 12 bytes per token of the step's longest trajectory). run/evidence.c checks these equal
 * its own bounds.
 */
#define SR_SCN_EVIDENCE_TURNS          4
#define SR_SCN_EVIDENCE_RESPONSE_BYTES ((uint64_t)1 << 20)

/*
 * A rough upper estimate, in bytes, of the memory a run of `s` needs on this machine:
 *   local engines x (3 x weights.total_bytes + engines.server.max_body_bytes + 32 MiB)
 *   + 3 x weights.total_bytes + 64 MiB on the trainer side
 *   + the evidence the rollouts keep until judged: for every rollout step, batch x
 *     SR_SCN_EVIDENCE_TURNS x (SR_SCN_EVIDENCE_RESPONSE_BYTES + min(max_body_bytes,
 *     12 x (prompt_max + turns x (max_tokens + 1 + obs_max)) + 4 KiB)), summed over the steps
 *     (async ones may overlap).
 * Three copies of the weights on each side: the current set, the set being received or
 * published, and the delta base. External engines (engines.urls) count nothing. Saturates at
 * UINT64_MAX instead of wrapping.
 */
uint64_t sr_scenario_memory_estimate(const sr_scenario *s);

/* The machine's physical memory in bytes (sysconf _SC_PHYS_PAGES x _SC_PAGESIZE); 0 unknown. */
uint64_t sr_scenario_machine_memory(void);

/*
 * The check of `syncroll lint` and `syncroll run` (both refuse unless --force): 0 when the
 * estimate fits in `machine` bytes (0: unknown, nothing is refused); otherwise
 * SR_E_TOO_MUCH_MEMORY "<path>: estimated memory <E> MiB exceeds the machine's <M> MiB
 * (<n> engine(s) with <W> MiB of weights and a <B> MiB max_body_bytes each)".
 */
int sr_scenario_memory_check(const sr_scenario *s, uint64_t machine, sr_err *err);

/* The expanded scenario as JSON text (appended to b). */
int sr_scenario_expanded_json(sr_buf *b, const sr_scenario *s, sr_err *err);

/* Writes the expanded scenario to `path`. */
int sr_scenario_write_expanded(const sr_scenario *s, const char *path, sr_err *err);

/*
 * Writes the engine config of the scenario (spec/engine_config.h shape 1) to `path`. Its
 * server.sync_dirs are the scenario's engines.server.sync_dirs, then `sync_dir` when not NULL
 * (an absolute path: `syncroll run` gives the run's sync folder); the engines may write under
 * those folders only. SR_E_INVAL when `sync_dir` is not absolute, too long, or would be a ninth
 * folder; SR_E_IO when the file cannot be written.
 */
int sr_scenario_write_engine(const sr_scenario *s, const char *path, const char *sync_dir,
                             sr_err *err);

/*
 * Collects scenario files from paths: a file is taken as given; a directory is searched
 * recursively for files ending in ".json" (names starting with '.' are skipped, and so are names
 * ending in ".field.json": packed-field definitions for `syncroll validate-field`, not
 * scenarios), each directory's files in strcmp order. *out (n entries) is freed with
 * sr_scenario_files_free. SR_E_IO for a path that does not exist or a directory that cannot be
 * read.
 */
int sr_scenario_files(char ***out, size_t *n, char *const *paths, size_t n_paths, sr_err *err);
void sr_scenario_files_free(char **v, size_t n);

/* 1 if `name` is a check a scenario may expect (spec/checks.h's names or any sr_err name). */
int sr_scenario_known_check(const char *name);

/* 1 if `name` is a classification of trace.row_mismatch. */
int sr_scenario_known_class(const char *name);

#endif /* SR_SCENARIO_H */
