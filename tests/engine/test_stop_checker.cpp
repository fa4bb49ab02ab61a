#include <gtest/gtest.h>

#include "engine/stop_checker.h"

namespace tessera {
namespace {

// Feeds pieces; returns everything emitted (pushes + flush unless matched).
std::string run(StopChecker& c, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += c.push(p);
  if (!c.matched()) out += c.flush();
  return out;
}

TEST(StopChecker, NoStopsPassesEverythingAtOnce) {
  StopChecker c({});
  EXPECT_EQ(c.push("Hello"), "Hello");
  EXPECT_EQ(c.push(" world"), " world");
  EXPECT_EQ(c.flush(), "");
}

TEST(StopChecker, StopSplitAcrossPiecesIsNotEmitted) {
  StopChecker c({"</end>"});
  std::string out = run(c, {"The answer", " is 42<", "/e", "nd> and more"});
  EXPECT_TRUE(c.matched());
  EXPECT_EQ(c.matched_stop(), "</end>");
  EXPECT_EQ(out, "The answer is 42");
  EXPECT_EQ(c.text(), "The answer is 42");
}

TEST(StopChecker, HoldsBackOnlyWhatCouldStartAStop) {
  StopChecker c({"STOP"});
  EXPECT_EQ(c.push("abcdef"), "abcdef");  // no suffix can begin "STOP"
  EXPECT_EQ(c.push("S"), "");             // "S" might
  EXPECT_EQ(c.push("T"), "");             // "ST" might
  EXPECT_EQ(c.push("x"), "STx");          // "STx" cannot
  EXPECT_EQ(c.push("ST"), "");
  EXPECT_EQ(c.flush(), "ST");
  EXPECT_FALSE(c.matched());
}

TEST(StopChecker, EarliestOfSeveralStopsWins) {
  StopChecker c({"world", "lo w"});
  std::string out = run(c, {"hel", "lo wor", "ld"});
  EXPECT_EQ(c.matched_stop(), "lo w");
  EXPECT_EQ(out, "hel");
}

TEST(StopChecker, StopInsideOnePiece) {
  StopChecker c({"\n\n"});
  EXPECT_EQ(run(c, {"line one\n\nline two"}), "line one");
}

TEST(StopChecker, NeverSplitsAUtf8Character) {
  // The stop begins with the second byte of "é": holding back that byte must not cut the
  // character in two.
  StopChecker c({"\xA9!x"});
  std::string out = c.push("caf\xC3\xA9!");
  EXPECT_EQ(out, "caf");
  EXPECT_EQ(c.flush(), "\xC3\xA9!");
}

TEST(StopChecker, NothingAfterMatch) {
  StopChecker c({"a"});
  EXPECT_EQ(c.push("bab"), "b");
  EXPECT_EQ(c.push("ccc"), "");
  EXPECT_EQ(c.flush(), "");
}

}  // namespace
}  // namespace tessera
