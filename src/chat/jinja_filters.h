// Jinja's built-in filters and tests, with transformers' tojson override (ensure_ascii=False,
// indent/separators/sort_keys options, no HTML escaping).
// ref: jinja2/filters.py, jinja2/tests.py, transformers utils/chat_template_utils.py.
#pragma once

#include <string>

#include "chat/jinja_value.h"

namespace tessera::jinja {

// Throws RuntimeError for an unknown name or bad arguments.
Value apply_filter(const std::string& name, const Value& v, CallArgs& args);
bool apply_test(const std::string& name, const Value& v, CallArgs& args);

// Whether Jinja 3.1 has a filter / test of this name. Jinja rejects unknown names when it
// compiles a template, except inside if-blocks and conditional expressions, where the error
// comes only if the call runs; the parser mirrors that.
bool is_jinja_filter(const std::string& name);
bool is_jinja_test(const std::string& name);

}  // namespace tessera::jinja
