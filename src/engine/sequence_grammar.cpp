#include "engine/sequence_grammar.h"

namespace tessera {

SequenceGrammar::SequenceGrammar(std::shared_ptr<grammar::TokenGrammar> g)
    : g_(std::move(g)), state_(g_->start()) {}

SequenceGrammar::Next SequenceGrammar::take(int32_t id, std::string& error) {
  try {
    state_ = g_->advance(state_, id);
    if (state_ == grammar::Matcher::kDead) {  // the mask makes this unreachable
      error = "the sampled token does not follow the output constraint";
      return Next::error;
    }
    if (!g_->can_continue(state_)) return Next::complete;
    // The next mask now (cached per state), so that a vocabulary that cannot continue shows here.
    if (g_->mask(state_)->allowed == 0 && !g_->accepting(state_)) {
      error = "no token of this model's vocabulary can continue the constrained output";
      return Next::error;
    }
  } catch (const std::exception& e) {  // too ambiguous (grammar/matcher.cpp's bounds)
    error = e.what();
    return Next::error;
  }
  return Next::more;
}

bool SequenceGrammar::mask(LogitMask& m, std::span<const int32_t> stop_ids,
                           std::vector<std::shared_ptr<const grammar::TokenMask>>& held,
                           std::string& error) {
  try {
    held.push_back(g_->mask(state_));  // usually a cache lookup: take() made it
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
  m.allow = held.back()->bits.data();
  m.also = g_->accepting(state_) ? stop_ids : std::span<const int32_t>();  // EOS ends it
  return true;
}

}  // namespace tessera
