// PaddedBody: every request body reaches the handler as a PaddedString,
// with its padding, whatever its size (small bodies through Beast's
// parser, large ones read straight into their buffer) or framing.
#include "server/padded_body.h"

#include <cstdio>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/write.hpp>
#include <gtest/gtest.h>

#include "server/http_server.h"
#include "test/support/server_fixture.h"

namespace fracpack::server {
namespace {

namespace http = boost::beast::http;

// Every one of the kPadding bytes past the text is readable and zero.
bool padded(const PaddedString& body) {
  const PaddedText t = body.padded();
  for (size_t i = 0; i < PaddedText::kPadding; ++i) {
    if (t.data()[t.size() + i] != '\0') return false;
  }
  return true;
}

TEST(PaddedBody, ReadsChunksIntoAPaddedString) {
  const std::string wire = "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  http::request_parser<PaddedBody> parser;
  parser.eager(true);
  boost::system::error_code ec;
  size_t used = 0;
  while (!parser.is_done() && !ec && used < wire.size()) used += parser.put(boost::asio::buffer(wire.data() + used, wire.size() - used), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(parser.is_done());
  EXPECT_EQ(parser.get().body().text(), "abcde");
  EXPECT_TRUE(padded(parser.get().body()));
}

TEST(PaddedBody, WritesTheTextWithoutItsPadding) {
  http::response<PaddedBody> res{http::status::ok, 11};
  res.body() = PaddedString(std::string_view("{\"a\":1}"));
  res.prepare_payload();
  std::ostringstream out;
  out << res;
  EXPECT_NE(out.str().find("Content-Length: 7\r\n\r\n{\"a\":1}"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find('\0'), std::string::npos);
}

TEST(PaddedBody, EveryBodyReachesTheHandlerPadded) {
  // Sizes on both sides of the transport's direct-read threshold (256 KiB)
  // and of its 128 KiB read step; and a chunked body.
  std::mutex mu;
  std::vector<std::string> seen;
  HttpOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.max_body_bytes = 4 << 20;
  HttpServer server(options, [&](HttpRequest&& request, Reply reply) {
    {
      std::lock_guard lock(mu);
      seen.push_back(padded(request.body) ? std::string(request.body.text()) : "unpadded");
    }
    reply(HttpResponse{200, "{}"});
  });
  ASSERT_TRUE(server.start().ok());
  const std::vector<size_t> sizes = {0, 1, 1000, (128 << 10) + 1, (256 << 10) - 1, 256 << 10, (256 << 10) + 1, 3 << 20};
  for (const size_t size : sizes) {
    std::string body(size, 'x');
    for (size_t i = 0; i < size; i += 4093) body[i] = static_cast<char>('a' + i % 26);
    const std::string request = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n" + body;
    const testing::RawExchange r = testing::raw_exchange(server.port(), {request});
    ASSERT_EQ(testing::status_of(r.response), 200) << size << ": " << r.response.substr(0, 200);
    std::lock_guard lock(mu);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_TRUE(seen.back() == body) << size << ": " << seen.back().substr(0, 64);
    seen.clear();
  }
  const std::string chunk(300 << 10, 'c');
  char hex[16];
  std::snprintf(hex, sizeof hex, "%zx", chunk.size());
  const testing::RawExchange r = testing::raw_exchange(
      server.port(), {"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(hex) + "\r\n" + chunk + "\r\n0\r\n\r\n"});
  ASSERT_EQ(testing::status_of(r.response), 200) << r.response.substr(0, 200);
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen.back() == chunk) << seen.back().substr(0, 64);
}

}  // namespace
}  // namespace fracpack::server
