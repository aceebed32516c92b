#pragma once
// Timelines of one evaluated iteration for people to look at: a Chrome/Perfetto trace (one process per rank
// role, one thread per stream, every task as a complete event, memory counter tracks: in all and by category)
// and the memory-over-time samples as CSV. Deterministic: same evaluation, same bytes.
#include <string>

#include "sim/graph/task_graph.hpp"
#include "sim/scenario/evaluate.hpp"

namespace shardsim::report {

/** @brief Chrome trace-event JSON (opens in Perfetto and chrome://tracing). Precondition: `ev` was evaluated
 *  with timings and the memory timeline kept. */
std::string chrome_trace(const scenario::Evaluation& ev);
/** @brief Every host <-> device copy of the iteration as CSV, in task order: role, direction (h2d, d2h), phase,
 *  purpose, start_s, end_s, bytes and the rate it ran at (GBps): the host link's activity over time. */
std::string host_link_csv(const scenario::Evaluation& ev);
/** @brief The memory timeline as CSV: role, time_s, bytes in use, then the same by category: what the rank
 *  holds all iteration (params, grads, optimizer, reserved) and what comes and goes (activations,
 *  gathered_params, grad_buffers, gather_buffers, logits), then the host memory the rank holds (host: ZeRO-Offload's
 *  optimizer states and pinned buffers, allocated at start; not part of `bytes`). */
std::string memory_csv(const scenario::Evaluation& ev);

}  // namespace shardsim::report
