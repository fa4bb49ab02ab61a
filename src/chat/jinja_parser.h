// Parser from tokens to the syntax tree, with Jinja's operator precedence and statement set
// (for/if/set/macro/call/filter/with/break/continue/generation/block).
// ref: jinja2/parser.py.
#pragma once

#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace tessera::jinja {

// Throws Error(invalid_model) naming the line and column of the first syntax error.
Body parse_template(const std::vector<Token>& tokens);

}  // namespace tessera::jinja
