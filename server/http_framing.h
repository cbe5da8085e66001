// The request framing the HTTP session refuses (400) before reading a
// body: what RFC 9112 lets a server refuse and fracpack's clients never
// send. Seen on the raw header (obsolete line folding, which Beast's
// parser would unfold) and on the parsed one (Host, Transfer-Encoding).
#pragma once

#include <string>
#include <string_view>

#include <boost/beast/http/message.hpp>

namespace fracpack::server {

// CRLF then a space or a tab inside the header block `head` (the bytes up
// to and including the last field's CRLF): a continuation line (obsolete
// line folding, RFC 9112 §5.2).
bool has_obs_fold(std::string_view head);

// An HTTP/1.1 request without Host (§3.2), a transfer coding other than
// chunked alone (§6.1: the body's end is unknown, and nothing here decodes
// gzip), and Transfer-Encoding beside Content-Length (§6.3: a request
// smuggling vector): why, or "" when the framing is sound.
std::string framing_error(const boost::beast::http::request_header<>& header);

}  // namespace fracpack::server
