// Integers within bounds as a grammar expression: JSON Schema's minimum / maximum (and the
// exclusive forms) on "type": "integer", as llama.cpp's json-schema-to-grammar
// _generate_min_max_int does it, digit by digit.
#pragma once

#include <cstdint>
#include <optional>

#include "grammar/expr.h"

namespace tessera::grammar {

// Decimal integers in [lo, hi] with no leading zeros and no "-0"; an absent bound is the
// largest magnitude the grammar allows, 16 digits (json_schema.cpp says why). Requires lo <= hi
// when both are given.
Expr integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace tessera::grammar
