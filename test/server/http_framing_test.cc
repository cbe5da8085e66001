// The framing the session refuses, decided on the header alone.
#include "server/http_framing.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <gtest/gtest.h>

namespace fracpack::server {
namespace {

namespace http = boost::beast::http;

// The header of `raw` (a request up to its blank line) as Beast parses it.
http::request_header<> header_of(const std::string& raw) {
  http::request_parser<http::empty_body> parser;
  parser.skip(true);  // the header alone
  boost::system::error_code ec;
  parser.put(boost::asio::buffer(raw), ec);
  EXPECT_TRUE(parser.is_header_done()) << ec.message() << ": " << raw;
  return parser.get().base();
}

TEST(HttpFraming, ObsoleteLineFoldingIsAContinuationLineInTheHeaderBlock) {
  EXPECT_FALSE(has_obs_fold("GET / HTTP/1.1\r\nHost: x\r\nX-A: a b\r\n"));
  EXPECT_TRUE(has_obs_fold("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n"));
  EXPECT_TRUE(has_obs_fold("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tb\r\n"));
  EXPECT_FALSE(has_obs_fold("GET / HTTP/1.1\r\nHost: x\r\n")) << "the block's last CRLF has nothing after it";
}

TEST(HttpFraming, RefusesWhatRfc9112LetsAServerRefuse) {
  EXPECT_EQ(framing_error(header_of("GET / HTTP/1.1\r\nHost: x\r\n\r\n")), "");
  EXPECT_EQ(framing_error(header_of("GET / HTTP/1.0\r\n\r\n")), "") << "HTTP/1.0 needs no Host";
  EXPECT_EQ(framing_error(header_of("GET / HTTP/1.1\r\n\r\n")), "HTTP/1.1 request without a Host header");
  EXPECT_EQ(framing_error(header_of("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:  chunked \r\n\r\n")), "");
  EXPECT_NE(framing_error(header_of("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")).find("unsupported Transfer-Encoding"),
            std::string::npos);
  // (Beast's parser itself refuses chunked twice, and this pair; the
  // checks stand for any header it lets through.)
  http::request_header<> both = header_of("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  both.set(http::field::content_length, "5");
  EXPECT_EQ(framing_error(both), "both Transfer-Encoding and Content-Length");
}

}  // namespace
}  // namespace fracpack::server
