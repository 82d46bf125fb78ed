// Internal: the model at one micro-batch size with its per-op times and memory numbers.
#pragma once

#include "prepared_step.hpp"

namespace parasim::strategies::detail {

/// Gradient-accumulation passes each micro-batch pays (StepSetup::grad_accumulation, p.dtype).
double accumulation_passes(const Prepared& p);
/// Builds (through the cache) the model at `micro` samples and its op times on every used kind.
Variant make_variant(const Prepared& p, std::int64_t micro);
/// The transfer sizes alone (xfer_bytes, as fill_variant_memory sets them): what the layer
/// partition and the step bound read, before placement.
void fill_variant_transfers(const Prepared& p, Variant& v);
/// Memory and transfer sizes; needs placement and recompute segments.
void fill_variant_memory(const Prepared& p, Variant& v);
/// Where the op costs of the variants came from, counted once per (micro-batch, op, device kind).
void count_cost_sources(Prepared& p);

}  // namespace parasim::strategies::detail
