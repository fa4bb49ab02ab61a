// Tokenizer of Jinja templates under the environment transformers uses for chat templates
// (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False): text between tags
// becomes Data tokens with whitespace control already applied; tag contents become
// name/number/string/operator tokens. ref: jinja2/lexer.py (Lexer.tokeniter).
#pragma once

#include <string>
#include <vector>

namespace tessera::jinja {

enum class Tok { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };

struct Token {
  Tok kind;
  std::string text;  // Data: the text; String: decoded value; Name/Op/Int/Float: as written
  int line = 1, col = 1;
};

// Throws Error(invalid_model) "chat template syntax error at line L, column C: ...".
std::vector<Token> tokenize(const std::string& source);

// Raises a syntax error at a position (shared with the parser).
[[noreturn]] void syntax_error(int line, int col, const std::string& msg);

}  // namespace tessera::jinja
