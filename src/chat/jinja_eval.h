// Evaluates a parsed template: Jinja's scoping (a for-loop body and a macro get their own
// scope; if-blocks do not), the loop variable, loop controls, macros, call blocks, and the
// globals transformers adds (raise_exception, strftime_now) besides Jinja's (range,
// namespace, dict). ref: jinja2/compiler.py, jinja2/runtime.py (LoopContext, Macro).
#pragma once

#include <string>

#include "chat/jinja_ast.h"
#include "chat/jinja_value.h"

namespace tessera::jinja {

// Renders `program` with the variables of `context` (a Dict value). Throws RuntimeError (with
// the template line prepended) or RaisedError (the template's raise_exception message).
std::string render_program(const Body& program, const Value& context);

}  // namespace tessera::jinja
