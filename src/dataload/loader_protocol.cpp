// SPDX-License-Identifier: Apache-2.0
#include "dataload/loader_protocol.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <limits>

namespace mlos::dataload {

using nlohmann::json;

namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

Error bad(const std::string& what) { return make_error(MLOS_ERR_INVALID_ARGUMENT, "loader protocol: " + what); }

// Reads an unsigned field no larger than `max`.
Result<uint64_t> unsigned_field(const json& j, const char* key, uint64_t max = std::numeric_limits<uint64_t>::max()) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return bad(std::string("field ") + key + " must be an unsigned integer");
  const uint64_t v = it->get<uint64_t>();
  if (v > max) return bad(std::string("field ") + key + " is out of range");
  return v;
}

Result<std::string> string_field(const json& j, const char* key, size_t max_bytes = 4096) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return bad(std::string("field ") + key + " must be a string");
  std::string s = it->get<std::string>();
  if (s.size() > max_bytes) return bad(std::string("field ") + key + " is too long");
  return s;
}

// Fills *out from j[key], or sets *error. Lets a decoder read many fields
// in a row and check once.
struct FieldReader {
  const json& j;
  std::optional<Error> error;
  uint32_t u32(const char* key) { return static_cast<uint32_t>(u64(key, std::numeric_limits<uint32_t>::max())); }
  uint64_t u64(const char* key, uint64_t max = std::numeric_limits<uint64_t>::max()) {
    if (error) return 0;
    auto v = unsigned_field(j, key, max);
    if (!v) error = v.error();
    return v ? *v : 0;
  }
  std::string str(const char* key, size_t max_bytes = 4096) {
    if (error) return "";
    auto v = string_field(j, key, max_bytes);
    if (!v) error = v.error();
    return v ? *v : "";
  }
};

Result<json> parse_object(const std::string& packet) {
  json j = json::parse(packet, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return bad("a packet must be a JSON object");
  if (!j.contains("op") || !j["op"].is_string()) return bad("a packet must name its op");
  return j;
}

template <class T>
Result<T> checked(FieldReader& r, T value) {
  if (r.error) return *r.error;
  return value;
}

}  // namespace

json encode(const TrainerMessage& m) {
  return std::visit(Overloaded{
                        [](const StartRequest& s) {
                          return json{{"op", "start"},       {"source", s.source},   {"batch_size", s.batch_size},
                                      {"image_size", s.image_size}, {"transform", s.transform},
                                      {"layout", s.layout}, {"seed", s.seed},       {"rank", s.rank},
                                      {"world_size", s.world_size}, {"flags", s.flags}, {"workers", s.workers},
                                      {"slot_offsets", s.slot_offsets}, {"cpus", s.cpus},
                                      {"read_ahead_bytes", s.read_ahead_bytes}};
                        },
                        [](const EpochRequest& e) { return json{{"op", "epoch"}, {"epoch", e.epoch}, {"pass", e.pass}}; },
                        [](const FreeSlot& f) {
                          return json{{"op", "free"}, {"slot", f.slot}, {"waited_us", f.waited_us},
                                      {"interval_us", f.interval_us}, {"held", f.held}};
                        },
                        [](const StopRequest&) { return json{{"op", "stop"}}; },
                    },
                    m);
}

json encode(const HelperMessage& m) {
  return std::visit(Overloaded{
                        [](const Started& s) {
                          return json{{"op", "started"},
                                      {"samples", s.samples},
                                      {"samples_per_epoch", s.samples_per_epoch},
                                      {"batches_per_epoch", s.batches_per_epoch},
                                      {"classes", s.classes},
                                      {"workers", s.workers},
                                      {"reader", s.reader},
                                      {"read_ahead_bytes", s.read_ahead_bytes},
                                      {"notes", s.notes}};
                        },
                        [](const BatchReady& b) {
                          return json{{"op", "batch"}, {"pass", b.pass}, {"epoch", b.epoch}, {"index", b.index},
                                      {"slot", b.slot}, {"count", b.count}, {"skipped", b.skipped},
                                      {"active_workers", b.active_workers}};
                        },
                        [](const EpochEnd& e) {
                          return json{{"op", "end"}, {"pass", e.pass}, {"epoch", e.epoch}, {"batches", e.batches},
                                      {"skipped", e.skipped}};
                        },
                        [](const BadSample& b) {
                          return json{{"op", "bad"}, {"pass", b.pass}, {"epoch", b.epoch}, {"what", b.what},
                                      {"reason", b.reason}};
                        },
                        [](const Failed& f) { return json{{"op", "failed"}, {"code", -f.code}, {"message", f.message}}; },
                    },
                    m);
}

Result<TrainerMessage> decode_trainer_message(const std::string& packet) {
  auto j = parse_object(packet);
  if (!j) return j.error();
  const std::string op = (*j)["op"];
  FieldReader r{*j, std::nullopt};
  if (op == "start") {
    StartRequest s;
    s.source = r.str("source");
    s.batch_size = r.u32("batch_size");
    s.image_size = r.u32("image_size");
    s.transform = r.u32("transform");
    s.layout = r.u32("layout");
    s.seed = r.u64("seed");
    s.rank = r.u32("rank");
    s.world_size = r.u32("world_size");
    s.flags = r.u32("flags");
    s.workers = r.u32("workers");
    s.read_ahead_bytes = r.u64("read_ahead_bytes");
    if (r.error) return *r.error;
    const json& offsets = (*j)["slot_offsets"];
    const json& cpus = (*j)["cpus"];
    if (!offsets.is_array() || offsets.empty() || offsets.size() > 1024) return bad("slot_offsets must be 1..1024 offsets");
    for (const json& o : offsets) {
      if (!o.is_number_unsigned()) return bad("slot_offsets must be unsigned integers");
      s.slot_offsets.push_back(o.get<uint64_t>());
    }
    if (!cpus.is_array() || cpus.size() > 4096) return bad("cpus must be a list of CPU numbers");
    for (const json& c : cpus) {
      if (!c.is_number_unsigned() || c.get<uint64_t>() >= 4096) return bad("cpus must be CPU numbers under 4096");
      s.cpus.push_back(c.get<int>());
    }
    return TrainerMessage(std::move(s));
  }
  if (op == "epoch") {
    EpochRequest e;
    e.epoch = r.u64("epoch");
    e.pass = r.u64("pass");
    return checked<TrainerMessage>(r, e);
  }
  if (op == "free") {
    FreeSlot f;
    f.slot = r.u32("slot");
    f.waited_us = r.u64("waited_us");
    f.interval_us = r.u64("interval_us");
    f.held = r.u32("held");
    return checked<TrainerMessage>(r, f);
  }
  if (op == "stop") return TrainerMessage(StopRequest{});
  return bad("unknown op " + op.substr(0, 32));
}

Result<HelperMessage> decode_helper_message(const std::string& packet) {
  auto j = parse_object(packet);
  if (!j) return j.error();
  const std::string op = (*j)["op"];
  FieldReader r{*j, std::nullopt};
  if (op == "started") {
    Started s;
    s.samples = r.u64("samples");
    s.samples_per_epoch = r.u64("samples_per_epoch");
    s.batches_per_epoch = r.u64("batches_per_epoch");
    s.classes = r.u32("classes");
    s.workers = r.u32("workers");
    s.reader = r.u32("reader");
    s.read_ahead_bytes = r.u64("read_ahead_bytes");
    s.notes = r.str("notes");
    return checked<HelperMessage>(r, s);
  }
  if (op == "batch") {
    BatchReady b;
    b.pass = r.u64("pass");
    b.epoch = r.u64("epoch");
    b.index = r.u64("index");
    b.slot = r.u32("slot");
    b.count = r.u32("count");
    b.skipped = r.u32("skipped");
    b.active_workers = r.u32("active_workers");
    return checked<HelperMessage>(r, b);
  }
  if (op == "end") {
    EpochEnd e;
    e.pass = r.u64("pass");
    e.epoch = r.u64("epoch");
    e.batches = r.u64("batches");
    e.skipped = r.u64("skipped");
    return checked<HelperMessage>(r, e);
  }
  if (op == "bad") {
    BadSample b;
    b.pass = r.u64("pass");
    b.epoch = r.u64("epoch");
    b.what = r.str("what");
    b.reason = r.str("reason");
    return checked<HelperMessage>(r, b);
  }
  if (op == "failed") {
    Failed f;
    f.code = -static_cast<int>(r.u64("code", 1000));
    f.message = r.str("message", 16384);
    return checked<HelperMessage>(r, f);
  }
  return bad("unknown op " + op.substr(0, 32));
}

Status send_packet(int fd, const json& message) {
  const std::string bytes = message.dump(-1, ' ', false, json::error_handler_t::replace);
  if (bytes.size() > kMaxPacket) return make_error(MLOS_ERR_INVALID_ARGUMENT, "loader message over 64 KiB");
  for (;;) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(bytes.size())) return Status::Ok();
    if (n < 0 && errno == EINTR) continue;
    const int err = n < 0 ? errno : EMSGSIZE;
    return make_sys_error(err, "loader socket",
                          err == EPIPE || err == ECONNRESET ? MLOS_ERR_PEER_LOST : MLOS_ERR_SYSTEM);
  }
}

Result<std::optional<std::string>> receive_packet(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    const int ready = poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return make_sys_error(errno, "poll on the loader socket");
    if (ready == 0) return std::optional<std::string>();
    break;
  }
  std::string buf(kMaxPacket + 1, '\0');
  for (;;) {
    const ssize_t n = recv(fd, buf.data(), buf.size(), MSG_TRUNC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      return make_sys_error(err, "loader socket", err == ECONNRESET ? MLOS_ERR_PEER_LOST : MLOS_ERR_SYSTEM);
    }
    if (n == 0) return make_error(MLOS_ERR_PEER_LOST, "the other end of the loader closed its socket");
    if (static_cast<size_t>(n) > kMaxPacket) return bad("a packet over 64 KiB");
    buf.resize(static_cast<size_t>(n));
    return std::optional<std::string>(std::move(buf));
  }
}

}  // namespace mlos::dataload
