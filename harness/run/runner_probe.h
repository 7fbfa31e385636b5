/*
 * runner_probe: the probe step. Runs the metamorphic relations of meta.h against one of the
 * scenario's engines (spawned or engines.urls), in the scenario's dialect, with its seed and
 * model, and records their checks beside the oracle's (so both verdicts can be compared on
 * syncroll's own engines, and an external engine still gets relations judged without the
 * oracle). With `sync`, the step syncs that engine three times through its control plane
 * (broadcast, the scenario's engines.sync_dialect), ending on the model's own weights at the
 * version it held + 3: later steps' oracle then no longer knows the engine's version, so such a
 * probe belongs at the end of the steps (FORMAT.md §10).
 */
#ifndef SR_RUNNER_PROBE_H
#define SR_RUNNER_PROBE_H

#include "runner_state.h"

/* The executor of a probe step (sr_step_fn): 0 when the relations ran (their failures are
 * checks), else a harness error (memory, a client or sync driver that could not be made). */
int sr_step_probe(sr_scn_run *run, int step, sr_err *err);

/* The generates of the probe a scenario with engines.urls gets by itself. */
#define SR_RUN_PROBE_BUDGET 40

/*
 * A scenario with engines.urls and no probe step of its own gets one after its steps: the
 * relations without syncs, against engine 0, within SR_RUN_PROBE_BUDGET generates (the oracle's
 * checks are skipped there; these judge the engine without it). 0 and nothing done for any
 * other scenario or after a stop signal; else as sr_step_probe.
 */
int sr_run_probe_external(sr_scn_run *run, sr_err *err);

#endif /* SR_RUNNER_PROBE_H */
