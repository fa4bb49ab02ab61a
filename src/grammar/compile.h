// A request's output constraint (tessera::OutputConstraint, include/tessera/engine.h) compiled to
// a byte-level grammar: the one entry point the engine calls.
#pragma once

#include <memory>

#include "grammar/grammar.h"
#include "tessera/engine.h"

namespace tessera::grammar {

// Throws Error(invalid_argument) saying what is wrong with the constraint's text.
std::shared_ptr<const Grammar> compile(const OutputConstraint& c);

}  // namespace tessera::grammar
