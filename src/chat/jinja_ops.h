// Jinja's object protocol over template values: attribute and item access (with Jinja's
// fallbacks and Undefined results), slicing, iteration, `in`, and Python arithmetic.
// ref: jinja2/sandbox.py (SandboxedEnvironment.getattr/getitem), jinja2/runtime.py.
#pragma once

#include <string>

#include "chat/jinja_value.h"

namespace tessera::jinja {

Value get_attr(const Value& obj, const std::string& name);  // obj.name
Value get_item(const Value& obj, const Value& key);         // obj[key]
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
List iterate(const Value& v);                                            // for x in v
bool contains(const Value& container, const Value& item);                // item in container
Value binary_op(const std::string& op, const Value& a, const Value& b);  // + - * / // % ** ~
Value negate(const Value& v, bool minus);                                // -v / +v
int64_t length(const Value& v);                                          // len(v)

// Bound methods of str, dict and list values (str.strip, dict.items, ...); an Undefined when
// the type has no such method.
Value get_method(const Value& obj, const std::string& name);

}  // namespace tessera::jinja
