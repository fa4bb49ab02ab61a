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

}  // namespace tessera::jinja
