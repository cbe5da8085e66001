// A Beast Body (the Body concept: value_type, reader, writer, size) whose
// value is a PaddedString: every request body the transport reads reaches
// the application with the padding a JSON parser reads past its end
// (common/json/padded_text.h), whatever its size or framing.
#pragma once

#include <cstdint>
#include <optional>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/buffer_traits.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>

#include "common/json/padded_text.h"

namespace fracpack::server {

struct PaddedBody {
  using value_type = PaddedString;

  static std::uint64_t size(const value_type& body) { return body.size(); }

  // Fills the body as the parser hands over its bytes (the parser enforces
  // the body limit before they come here).
  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>& length, boost::system::error_code& ec) {
      body_.clear();
      if (length) body_.reserve(static_cast<size_t>(*length));  // one allocation for a body of known length
      ec = {};
    }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
      std::size_t n = 0;
      for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it) {
        const boost::asio::const_buffer b = *it;
        body_.append(static_cast<const char*>(b.data()), b.size());
        n += b.size();
      }
      ec = {};
      return n;
    }
    void finish(boost::system::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };

  // Writes the text (never the padding): one buffer.
  class writer {
   public:
    using const_buffers_type = boost::asio::const_buffer;

    template <bool isRequest, class Fields>
    writer(const boost::beast::http::header<isRequest, Fields>&, const value_type& body) : body_(body) {}

    void init(boost::system::error_code& ec) { ec = {}; }
    boost::optional<std::pair<const_buffers_type, bool>> get(boost::system::error_code& ec) {
      ec = {};
      return {{const_buffers_type(body_.data(), body_.size()), false}};
    }

   private:
    const value_type& body_;
  };
};

}  // namespace fracpack::server
