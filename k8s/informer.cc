#include "k8s/informer.h"

#include <condition_variable>
#include <deque>
#include <thread>
#include <vector>

#include "common/json/stream.h"
#include "k8s/objects.h"

namespace fracpack::k8s {
namespace {

// What a streamed response's head said, and the start of an error body
// (the first 64 KiB, for the message); a 200's bytes go to the caller.
struct StreamReply {
  int status = 0;
  bool headed = false;
  std::string retry_after, error_body;

  auto on_head() {
    return [this](int s, const std::string& ra) {
      status = s;
      headed = true;
      retry_after = ra;
      return Status::Ok();
    };
  }
  template <class Fn>
  auto on_body(Fn ok) {
    return [this, ok](std::string_view bytes) -> Status {
      if (status != 200) {
        if (error_body.size() < 65536) error_body.append(bytes);
        return Status::Ok();
      }
      return ok(bytes);
    };
  }
};

// Ends a stream early with a decision already taken.
const char* const kStopStream = "informer: stream stopped on purpose";

// Hands list items to the sink, on the caller's thread or on a worker.
// Items are copied into batches of about kBatchBytes; at most kMaxBatches
// wait, which bounds the memory between reading and decoding to a few MB.
class ItemPipeline {
 public:
  static constexpr size_t kBatchBytes = 1 << 19;
  static constexpr size_t kMaxBatches = 4;

  ItemPipeline(InformerSink& sink, bool threaded) : sink_(sink) {
    if (threaded) worker_ = std::thread([this] { work(); });
  }
  ~ItemPipeline() { stop(); }
  ItemPipeline(const ItemPipeline&) = delete;
  ItemPipeline& operator=(const ItemPipeline&) = delete;

  void push(std::string_view item) {
    if (!worker_.joinable()) {
      deliver(item);
      return;
    }
    filling_.text.append(item);
    filling_.ends.push_back(filling_.text.size());
    if (filling_.text.size() >= kBatchBytes) hand_over();
  }

  // Waits until every item pushed so far was delivered; returns the first
  // item's error (a bad item is reported, the list goes on).
  Status finish() {
    if (worker_.joinable()) {
      hand_over();
      std::unique_lock lock(mu_);
      drained_.wait(lock, [&] { return queue_.empty() && !busy_; });
    }
    return first_error_;
  }

 private:
  struct Batch {
    std::string text;
    std::vector<size_t> ends;
  };

  void deliver(std::string_view item) {
    Status s = sink_.list_item(item);
    if (!s.ok() && first_error_.ok()) first_error_ = s;
  }

  void hand_over() {
    if (filling_.ends.empty()) return;
    std::unique_lock lock(mu_);
    space_.wait(lock, [&] { return queue_.size() < kMaxBatches; });
    queue_.push_back(std::move(filling_));
    filling_ = Batch{};
    filling_.text.reserve(kBatchBytes + (64 << 10));
    ready_.notify_one();
  }

  void work() {
    std::unique_lock lock(mu_);
    while (true) {
      ready_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;  // stopping, nothing left
      Batch batch = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      space_.notify_one();
      lock.unlock();
      size_t begin = 0;
      for (size_t end : batch.ends) {
        if (!stopping_.load()) deliver(std::string_view(batch.text).substr(begin, end - begin));
        begin = end;
      }
      lock.lock();
      busy_ = false;
      if (queue_.empty()) drained_.notify_all();
    }
  }

  void stop() {
    if (!worker_.joinable()) return;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      queue_.clear();
    }
    ready_.notify_one();
    space_.notify_all();
    worker_.join();
  }

  InformerSink& sink_;
  Status first_error_ = Status::Ok();  // written by the delivering thread only, read after finish()
  Batch filling_;
  std::mutex mu_;
  std::condition_variable ready_, space_, drained_;
  std::deque<Batch> queue_;
  bool busy_ = false;
  std::atomic<bool> stopping_{false};
  std::thread worker_;
};

}  // namespace

Informer::Informer(ClientConfig client, InformerOptions options, InformerSink& sink, uint64_t seed)
    : client_(std::move(client)), options_(std::move(options)), sink_(sink), rng_(seed) {}

InformerStats Informer::stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

std::string Informer::query(const std::string& rv, bool watch, int timeout_seconds, const std::string& cont) const {
  // client-go sorts its query keys; order does not matter to the server.
  std::string q = options_.resource + "?";
  if (watch) q += "allowWatchBookmarks=true&";
  if (!cont.empty()) q += "continue=" + url_encode(cont) + "&";
  if (!options_.field_selector.empty()) q += "fieldSelector=" + url_encode(options_.field_selector) + "&";
  // Pages for RV "" or "0" (a continue page has none): every page carries
  // the limit, as client-go's pager sends it; without it the server would
  // answer the rest of the list at once.
  if (!watch && (rv.empty() || rv == "0")) q += "limit=" + std::to_string(options_.page_size) + "&";
  if (!rv.empty() && cont.empty()) q += "resourceVersion=" + url_encode(rv) + "&";
  if (watch) q += "timeoutSeconds=" + std::to_string(timeout_seconds) + "&watch=true&";
  q.pop_back();
  return q;
}

std::chrono::milliseconds Informer::next_backoff() {
  const auto now = std::chrono::steady_clock::now();
  if (backoff_.count() == 0 || now - last_failure_ > options_.backoff_reset) {
    backoff_ = options_.backoff_initial;
  } else {
    backoff_ = std::min(backoff_ * 2, options_.backoff_max);
  }
  last_failure_ = now;
  std::uniform_real_distribution<double> jitter(0.0, 1.0);  // client-go's jitter factor 1.0
  return std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(backoff_.count()) * (1 + jitter(rng_))));
}

void Informer::failed(const std::string& what) {
  std::lock_guard lock(stats_mu_);
  ++stats_.errors;
  stats_.last_error = what;
}

// A 429 is a failure too, as far as anyone watching is concerned: without
// it a source kept unsynced by throttling showed "listing" and logged
// nothing (seen in the chaos soak).
void Informer::throttled(const char* verb) {
  std::lock_guard lock(stats_mu_);
  ++stats_.throttled;
  ++stats_.errors;
  stats_.last_error = std::string(verb) + " " + options_.resource + ": throttled by the API server (429 Too Many Requests)";
}

void Informer::sleep(std::stop_token& stop, std::chrono::milliseconds d) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, stop, d, [] { return false; });
}

void Informer::run(std::stop_token stop) {
  std::stop_callback interrupt_on_stop(stop, [this] { client_.cancel(); });
  Next next = Next::kList;
  while (!stop.stop_requested() && next != Next::kStop) {
    next = next == Next::kList ? list(stop) : watch(stop);
  }
}

Informer::Next Informer::list(std::stop_token& stop) {
  const std::string rv = rv_unavailable_ ? "" : (last_rv_.empty() ? "0" : last_rv_);
  std::string cont, list_rv;
  sink_.begin_list(rv.empty());
  while (true) {
    ListSplitter splitter;
    ItemPipeline items(sink_, options_.decode_thread);
    StreamReply reply;
    auto result = client_.stream(query(cont.empty() ? rv : "", false, 0, cont), client_.config().request_timeout,
                                 reply.on_head(), reply.on_body([&](std::string_view bytes) {
                                   return splitter.feed(bytes, [&](std::string_view item) {
                                     items.push(item);
                                     return Status::Ok();
                                   });
                                 }));
    const int status = reply.status;
    const std::string& error_body = reply.error_body;
    const std::string& retry = reply.retry_after;
    // Every item of this page is applied before the list is judged.
    const Status item_error = items.finish();
    if (stop.stop_requested()) {
      sink_.abort_list();
      return Next::kStop;
    }
    if (!result) {
      sink_.abort_list();
      failed(result.message());
      sleep(stop, next_backoff());
      return Next::kList;
    }
    if (status == 410 || (status == 504 && error_body.find("Too large resource version") != std::string::npos)) {
      // The resource version is gone (or not yet there): a consistent read at once.
      sink_.abort_list();
      {
        std::lock_guard lock(stats_mu_);
        ++stats_.expired;
      }
      rv_unavailable_ = true;
      return Next::kList;
    }
    if (status == 429) {
      sink_.abort_list();
      throttled("LIST");
      sleep(stop, std::max(next_backoff(), retry_after_delay(retry)));
      return Next::kList;
    }
    if (status != 200) {
      sink_.abort_list();
      failed("LIST " + options_.resource + ": " + api_error_message(HttpResponse{status, error_body, "", retry}));
      sleep(stop, next_backoff());
      return Next::kList;
    }
    if (Status s = splitter.finish(); !s.ok()) {
      sink_.abort_list();
      failed("LIST " + options_.resource + ": " + s.message());
      sleep(stop, next_backoff());
      return Next::kList;
    }
    if (!item_error.ok()) failed("LIST " + options_.resource + ": " + item_error.message());
    auto meta = parse_list_meta(splitter.metadata());
    if (!meta) {
      sink_.abort_list();
      failed("LIST " + options_.resource + ": metadata: " + meta.message());
      sleep(stop, next_backoff());
      return Next::kList;
    }
    if (list_rv.empty()) list_rv = meta->resource_version;
    if (meta->continue_token.empty()) break;
    cont = meta->continue_token;
  }
  sink_.end_list(list_rv);
  last_rv_ = list_rv;
  rv_unavailable_ = false;
  std::lock_guard lock(stats_mu_);
  if (stats_.lists++ > 0) ++stats_.relists;
  stats_.resource_version = last_rv_;
  stats_.synced = true;
  stats_.synced_at = std::chrono::steady_clock::now();
  return Next::kWatch;
}

Informer::Next Informer::watch(std::stop_token& stop) {
  const auto min = options_.min_watch_timeout.count();
  const int timeout = static_cast<int>(min + static_cast<int64_t>(rng_() % static_cast<uint64_t>(std::max<int64_t>(min, 1))));
  const auto started = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(stats_mu_);
    ++stats_.watches;
  }
  ObjectSplitter splitter;
  StreamReply reply;
  const int& status = reply.status;
  const std::string& error_body = reply.error_body;
  const std::string& retry = reply.retry_after;
  uint64_t seen = 0;
  Next decided = Next::kWatch;
  bool decided_backoff = false;
  auto on_event = [&](std::string_view event_json) -> Status {
    auto ev = parse_watch_event(event_json);
    if (!ev) {
      failed("WATCH " + options_.resource + ": " + ev.message());
      return Status::Ok();  // skip what cannot be read; the next relist repairs it
    }
    if (ev->type == "ADDED" || ev->type == "MODIFIED" || ev->type == "DELETED") {
      const WatchEventType t = ev->type == "ADDED" ? WatchEventType::kAdded
                               : ev->type == "MODIFIED" ? WatchEventType::kModified
                                                        : WatchEventType::kDeleted;
      auto rv = sink_.event(t, ev->object);
      ++seen;
      std::lock_guard lock(stats_mu_);
      stats_.last_event = std::chrono::steady_clock::now();
      if (!rv) {
        ++stats_.errors;
        stats_.last_error = "WATCH " + options_.resource + ": " + rv.message();
        return Status::Ok();
      }
      ++stats_.events;
      if (!rv->empty()) last_rv_ = *rv;
      stats_.resource_version = last_rv_;
      return Status::Ok();
    }
    if (ev->type == "BOOKMARK") {
      ++seen;
      std::lock_guard lock(stats_mu_);
      ++stats_.bookmarks;
      stats_.last_event = std::chrono::steady_clock::now();
      if (!ev->resource_version.empty()) last_rv_ = ev->resource_version;
      stats_.resource_version = last_rv_;
      return Status::Ok();
    }
    if (ev->type == "ERROR") {
      auto st = parse_status(ev->object);
      const int code = st ? st->code : 0;
      const std::string reason = st ? st->reason : "";
      if (code == 410 || reason == "Expired" || reason == "Gone") {
        std::lock_guard lock(stats_mu_);
        ++stats_.expired;
        decided = Next::kList;
        decided_backoff = true;
      } else if (code == 429) {
        throttled("WATCH");
        decided = Next::kWatch;
        decided_backoff = true;
      } else {
        failed("WATCH " + options_.resource + ": ERROR event: " + (st ? st->message : std::string(ev->object)));
        decided = Next::kList;
        decided_backoff = true;
      }
      return Error{kStopStream};
    }
    failed("WATCH " + options_.resource + ": unknown event type " + ev->type);
    return Status::Ok();
  };
  auto result = client_.stream(
      query(last_rv_, true, timeout, ""), std::chrono::seconds(timeout) + options_.read_margin,
      reply.on_head(), reply.on_body([&](std::string_view bytes) { return splitter.feed(bytes, on_event); }));
  if (stop.stop_requested()) return Next::kStop;
  const bool short_and_empty = seen == 0 && std::chrono::steady_clock::now() - started < std::chrono::seconds(1);
  // Anything but a watch that ran to its timeout (or was throttled).
  const bool normal_end = result && status == 200 && !short_and_empty;
  const bool throttled_only = (!result && result.message() == kStopStream && decided == Next::kWatch) || (result && status == 429);
  if (!normal_end && !throttled_only) sink_.watch_interrupted();
  if (!result) {
    if (result.message() == kStopStream) {
      if (decided_backoff) sleep(stop, next_backoff());
      return decided;
    }
    failed(result.message());
    if (!reply.headed) {
      // The watch could not be opened (refused, reset): wait, re-watch, no relist.
      sleep(stop, next_backoff());
      return Next::kWatch;
    }
    // The stream broke: resume from the last event, unless nothing came at all.
    if (short_and_empty) {
      sleep(stop, next_backoff());
      return Next::kList;
    }
    return Next::kWatch;
  }
  if (status == 410) {
    std::lock_guard lock(stats_mu_);
    ++stats_.expired;
    return Next::kList;
  }
  if (status == 429) {
    throttled("WATCH");
    sleep(stop, std::max(next_backoff(), retry_after_delay(retry)));
    return Next::kWatch;
  }
  if (status != 200) {
    failed("WATCH " + options_.resource + ": " + api_error_message(HttpResponse{status, error_body, "", retry}));
    sleep(stop, next_backoff());
    return Next::kList;
  }
  if (short_and_empty) {
    // "Very short watch": the server closed at once without a word.
    failed("WATCH " + options_.resource + ": closed within a second without events");
    sleep(stop, next_backoff());
    return Next::kList;
  }
  return Next::kWatch;  // a normal end: re-watch from the last resource version
}

}  // namespace fracpack::k8s
