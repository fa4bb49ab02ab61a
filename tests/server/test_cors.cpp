// --allowed-origins (server/cors.h): the policy's checks, the preflight's answer (Fetch
// standard's CORS protocol) and the header added to ordinary responses.
#include <gtest/gtest.h>

#include "server/cors.h"
#include "tessera/error.h"

namespace tessera::server {
namespace {

httplib::Request preflight(const std::string& origin, const std::string& headers) {
  httplib::Request req;
  req.method = "OPTIONS";
  req.path = "/v1/chat/completions";
  req.headers.emplace("Origin", origin);
  req.headers.emplace("Access-Control-Request-Method", "POST");
  if (!headers.empty()) req.headers.emplace("Access-Control-Request-Headers", headers);
  return req;
}

TEST(Cors, PolicyChecksOrigins) {
  const CorsPolicy p = make_cors_policy({"http://LocalHost:3000, https://a.example"}, false, false);
  ASSERT_EQ(p.origins.size(), 2u);
  EXPECT_EQ(p.origins[0], "http://localhost:3000");
  EXPECT_FALSE(p.any);
  EXPECT_THROW(make_cors_policy({"localhost:3000"}, false, false), Error);
  EXPECT_THROW(make_cors_policy({"http://a.example/"}, false, false), Error);
  EXPECT_THROW(make_cors_policy({"ftp://a.example"}, false, false), Error);
  try {
    make_cors_policy({"http://a.example/app"}, false, false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("http://a.example/app"), std::string::npos);
  }
}

TEST(Cors, WildcardWithKeyNeedsTheFlag) {
  EXPECT_TRUE(make_cors_policy({"*"}, false, false).any);
  try {
    make_cors_policy({"*"}, true, false);
    FAIL() << "'*' with an API key was accepted without the flag";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--allow-any-origin-with-key"), std::string::npos);
  }
  EXPECT_TRUE(make_cors_policy({"*"}, true, true).any);
}

TEST(Cors, AllowOriginMatchesExactly) {
  const CorsPolicy p = make_cors_policy({"http://127.0.0.1:8000"}, true, false);
  EXPECT_EQ(cors_allow_origin(p, "http://127.0.0.1:8000").value_or(""), "http://127.0.0.1:8000");
  EXPECT_FALSE(cors_allow_origin(p, "http://127.0.0.1:8001"));
  EXPECT_FALSE(cors_allow_origin(p, "http://127.0.0.1"));
  EXPECT_FALSE(cors_allow_origin(p, ""));
  EXPECT_FALSE(cors_allow_origin(CorsPolicy{}, "http://127.0.0.1:8000"));  // the default: none
  EXPECT_EQ(cors_allow_origin(make_cors_policy({"*"}, false, false), "null").value_or(""), "*");
}

TEST(Cors, PreflightAnswersMethodsHeadersAndMaxAge) {
  const CorsPolicy p = make_cors_policy({"http://127.0.0.1:8000"}, true, false);
  const auto req = preflight("http://127.0.0.1:8000", "authorization, x-stainless-os,bad header");
  EXPECT_TRUE(is_cors_preflight(req));
  httplib::Response res;
  EXPECT_EQ(answer_cors_preflight(p, req, res), 204);
  EXPECT_EQ(res.get_header_value("Access-Control-Allow-Origin"), "http://127.0.0.1:8000");
  EXPECT_EQ(res.get_header_value("Access-Control-Allow-Methods"), "GET, POST, OPTIONS");
  // Authorization once, the page's own header echoed, the malformed name dropped.
  EXPECT_EQ(res.get_header_value("Access-Control-Allow-Headers"),
            "Authorization, Content-Type, x-stainless-os");
  EXPECT_EQ(res.get_header_value("Access-Control-Max-Age"), "7200");
  EXPECT_NE(res.get_header_value("Vary").find("Origin"), std::string::npos);
  EXPECT_TRUE(res.body.empty());
}

TEST(Cors, PreflightFromAnotherOriginIs403) {
  const CorsPolicy p = make_cors_policy({"http://127.0.0.1:8000"}, false, false);
  httplib::Response res;
  EXPECT_EQ(answer_cors_preflight(p, preflight("http://evil.example", ""), res), 403);
  EXPECT_FALSE(res.has_header("Access-Control-Allow-Origin"));
  EXPECT_NE(res.body.find("origin_not_allowed"), std::string::npos);
  EXPECT_NE(res.body.find("http://evil.example"), std::string::npos);
}

TEST(Cors, NotAPreflightWithoutTheRequestMethod) {
  httplib::Request req;
  req.method = "OPTIONS";
  req.headers.emplace("Origin", "http://127.0.0.1:8000");
  EXPECT_FALSE(is_cors_preflight(req));
}

TEST(Cors, OrdinaryResponsesGetTheHeaderOnce) {
  const CorsPolicy p = make_cors_policy({"http://127.0.0.1:8000"}, false, false);
  httplib::Request req;
  req.method = "POST";
  req.headers.emplace("Origin", "http://127.0.0.1:8000");
  httplib::Response res;
  res.status = 401;
  add_cors_headers(p, req, res);
  add_cors_headers(p, req, res);
  EXPECT_EQ(res.get_header_value_count("Access-Control-Allow-Origin"), 1u);
  EXPECT_EQ(res.get_header_value("Vary"), "Origin");
  httplib::Request other;
  other.headers.emplace("Origin", "http://127.0.0.1:9000");
  httplib::Response res2;
  add_cors_headers(p, other, res2);
  EXPECT_FALSE(res2.has_header("Access-Control-Allow-Origin"));
}

}  // namespace
}  // namespace tessera::server
