// Shared pieces of the tessera CLI: every subcommand file defines add_<name>_command(), which
// main.cpp calls (one line per command).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

// The CLI's one internal header (core's Error helpers come with it); the rest is the public API.
#include "engine/dev_api.h"

namespace tessera::cli {

// "2,17,99" -> ids; throws Error(invalid_argument) naming the bad element.
std::vector<int32_t> parse_id_list(const std::string& s, const char* option);

// Runs a command body, turning tessera::Error and other exceptions into a one-line message on
// stderr and exit status 1.
int guarded(const std::function<int()>& body);
// The process exit status: subcommand callbacks run inside CLI11's parse and record it here.
int exit_code();
void run_command(const std::function<int()>& body);  // exit_code() = guarded(body)

void add_tokenize_commands(CLI::App& app);  // tokenize, detokenize
void add_info_command(CLI::App& app);
void add_logits_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_make_model_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_chat_template_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_classify_command(CLI::App& app);
void add_embed_command(CLI::App& app);
void add_batch_command(CLI::App& app);
void add_serve_command(CLI::App& app);

}  // namespace tessera::cli
