// SPDX-License-Identifier: Apache-2.0
#include "collectives/process_group.h"

#include "collectives/gloo_error.h"
#include "collectives/half_float.h"
#include "collectives/rank_claim.h"
#include "collectives/redis_store.h"
#include "collectives/tcp_store_rendezvous.h"
#include "os/sigpipe_guard.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/gather.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>

namespace mlos::collectives {

namespace {

// The time left until `deadline`, at least 1 ms: Gloo reads 0 as "no
// timeout".
std::chrono::milliseconds time_left(std::chrono::steady_clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                    deadline - std::chrono::steady_clock::now()));
}

// Gloo's stores wait 30 s unless told otherwise, and connectFullMesh does
// not tell them: this wrapper makes every wait end by the rendezvous's
// deadline (the group's timeout from its start).
class DeadlineStore final : public gloo::rendezvous::Store {
 public:
  DeadlineStore(gloo::rendezvous::Store& inner, std::chrono::steady_clock::time_point deadline)
      : inner_(inner), deadline_(deadline) {}
  void set(const std::string& key, const std::vector<char>& data) override { inner_.set(key, data); }
  std::vector<char> get(const std::string& key) override {
    inner_.wait({key}, time_left(deadline_));
    return inner_.get(key);
  }
  void wait(const std::vector<std::string>& keys) override { inner_.wait(keys, time_left(deadline_)); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    inner_.wait(keys, std::min(timeout, time_left(deadline_)));
  }

 private:
  gloo::rendezvous::Store& inner_;
  std::chrono::steady_clock::time_point deadline_;
};

// How long past the timeout the caller waits for a rendezvous thread.
constexpr std::chrono::milliseconds kRendezvousSlack{250};

std::string describe_store(const GroupConfig& c) {
  switch (c.store) {
    case GroupConfig::StoreKind::kFile: return "file:" + c.store_path;
    case GroupConfig::StoreKind::kRedis: return "redis://" + c.redis_host + ":" + std::to_string(c.redis_port);
    case GroupConfig::StoreKind::kCaller: return "the caller's store";
    case GroupConfig::StoreKind::kTcp:
      return "tcp://" + (c.tcp_host.find(':') != std::string::npos ? "[" + c.tcp_host + "]" : c.tcp_host) + ":" +
             std::to_string(c.tcp_port);
  }
  return "?";
}

// Every rank publishes the world size it was given and checks its peers'
// (rank 0's first, which every rank knows exists): a mismatch is a clear
// INVALID_ARGUMENT on the ranks that see it, instead of a rendezvous that
// waits for ranks that will never come. A rank number claimed twice is
// caught before (rank_claim.h), and for Redis here, where the store refuses
// to overwrite a key.
Status agree_on_world(gloo::rendezvous::Store& store, const GroupConfig& c) {
  const std::string mine = std::to_string(c.world_size);
  try {
    store.set("world_size/" + std::to_string(c.rank), std::vector<char>(mine.begin(), mine.end()));
  } catch (const std::exception& e) {
    if (std::string(e.what()).find("already set") == std::string::npos) throw;
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      "rank " + std::to_string(c.rank) + " is already taken in group " + c.prefix +
                          ": two processes were given the same rank, or the store holds an earlier run's keys "
                          "under this prefix (use a fresh MLOS_GROUP)");
  }
  for (int r = 0; r < c.world_size; ++r) {
    if (r == c.rank) continue;
    const std::vector<char> theirs = store.get("world_size/" + std::to_string(r));
    if (std::string(theirs.begin(), theirs.end()) != mine) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "world size mismatch: rank " + std::to_string(c.rank) +
                                                       " was given " + mine + ", rank " + std::to_string(r) + " " +
                                                       std::string(theirs.begin(), theirs.end()));
    }
  }
  return Status::Ok();
}

// out[i] = combine(a[i], b[i]): Gloo's element-wise reduction callback.
template <class T, class Combine>
void reduce_with(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  auto* x = static_cast<const T*>(a);
  auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = Combine{}(x[i], y[i]);
}

template <class T>
struct Min {
  T operator()(T a, T b) const { return std::min(a, b); }
};
template <class T>
struct Max {
  T operator()(T a, T b) const { return std::max(a, b); }
};

// The same over 16-bit floats stored as uint16_t: widen, combine, round
// back (to nearest even).
template <uint16_t (*Narrow)(float), float (*Widen)(uint16_t), class Combine>
void reduce_narrow(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<uint16_t*>(out);
  auto* x = static_cast<const uint16_t*>(a);
  auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = Narrow(Combine{}(Widen(x[i]), Widen(y[i])));
}

template <uint16_t (*Narrow)(float), float (*Widen)(uint16_t)>
gloo::AllreduceOptions::Func narrow_reducer(mlos_reduce_op_t op) {
  switch (op) {
    case MLOS_REDUCE_PROD: return reduce_narrow<Narrow, Widen, std::multiplies<float>>;
    case MLOS_REDUCE_MIN: return reduce_narrow<Narrow, Widen, Min<float>>;
    case MLOS_REDUCE_MAX: return reduce_narrow<Narrow, Widen, Max<float>>;
    default: return reduce_narrow<Narrow, Widen, std::plus<float>>;
  }
}

template <uint16_t (*Narrow)(float), float (*Widen)(uint16_t)>
void divide_narrow(void* data, size_t count, int by) {
  auto* p = static_cast<uint16_t*>(data);
  for (size_t i = 0; i < count; ++i) p[i] = Narrow(Widen(p[i]) / static_cast<float>(by));
}

template <class T>
gloo::AllreduceOptions::Func reducer(mlos_reduce_op_t op) {
  switch (op) {
    case MLOS_REDUCE_PROD: return reduce_with<T, std::multiplies<T>>;
    case MLOS_REDUCE_MIN: return reduce_with<T, Min<T>>;
    case MLOS_REDUCE_MAX: return reduce_with<T, Max<T>>;
    default: return reduce_with<T, std::plus<T>>;  // SUM, and AVG before the division
  }
}

template <class T>
void divide(void* data, size_t count, int by) {
  auto* p = static_cast<T*>(data);
  for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(by));
}

template <class T>
void set_output(gloo::AllreduceOptions& o, void* data, size_t count, mlos_reduce_op_t op) {
  o.setOutput(static_cast<T*>(data), count);
  o.setReduceFunction(reducer<T>(op));
}

}  // namespace

size_t element_size(DataType t) {
  switch (t) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat64: return 8;
    case DataType::kFloat16: return 2;
    case DataType::kBFloat16: return 2;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
  }
  return 0;
}

Error from_gloo(const std::string& what, const std::exception& e) {
  std::string msg = e.what();
  std::string lower = msg;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  const int code = lower.find("timed out") != std::string::npos || lower.find("timeout") != std::string::npos
                       ? MLOS_ERR_TIMEOUT
                       : MLOS_ERR_PEER_LOST;
  // Gloo messages carry a source location prefix ("[.../pair.cc:NNN] ...").
  return make_error(code, what + ": " + msg + "; the group is broken: every rank must create it again");
}

ProcessGroup::ProcessGroup(GroupConfig config, std::shared_ptr<gloo::Context> context)
    : config_(std::move(config)), context_(std::move(context)) {}

ProcessGroup::~ProcessGroup() = default;

Result<std::unique_ptr<ProcessGroup>> ProcessGroup::connect(const GroupConfig& config,
                                                            const GroupPlacement& placement) {
  // The rendezvous runs on its own thread, confined to the job's placement
  // (Gloo's event-loop thread, made during it, inherits that). Every store
  // mlOS opens ends its waits and commands by the deadline (DeadlineStore,
  // BoundedRedisStore, TcpStore's own timeout), so that thread is joined:
  // an abandoned rendezvous leaves nothing running. A caller's store runs
  // the caller's code, which may never return; for it alone the caller
  // waits at most the timeout (plus a little, so Gloo's own, more precise
  // errors win when they come) and a thread left behind is detached,
  // owning everything it uses; the prefix's generation moves on, so its
  // keys are never read.
  struct Attempt {
    std::mutex mu;
    std::condition_variable done_cv;
    std::optional<Result<std::unique_ptr<ProcessGroup>>> result;
  };
  auto attempt = std::make_shared<Attempt>();
  std::thread rendezvous([attempt, config, placement] {
    // Gloo's event loop, started below, inherits this: its writes to a dead
    // peer then fail with EPIPE instead of killing the process.
    os::block_sigpipe_in_this_thread();
    os::Kernel& kernel = os::linux_kernel();
    // Best effort: a thread that cannot be confined still connects; the
    // group's threads then run where the caller's process may.
    if (!placement.cpus.empty()) (void)kernel.set_affinity(kernel.current_tid(), placement.cpus);
    if (placement.memory_policy.mode != 0) (void)kernel.set_memory_policy(placement.memory_policy);
    auto r = connect_here(config);
    std::lock_guard lock(attempt->mu);
    attempt->result.emplace(std::move(r));
    attempt->done_cv.notify_all();
  });
  if (config.store != GroupConfig::StoreKind::kCaller) {
    rendezvous.join();
  } else {
    rendezvous.detach();
    std::unique_lock lock(attempt->mu);
    if (!attempt->done_cv.wait_for(lock, config.timeout + kRendezvousSlack,
                                   [&] { return attempt->result.has_value(); })) {
      return make_error(MLOS_ERR_TIMEOUT, "rendezvous of rank " + std::to_string(config.rank) + " of " +
                                              std::to_string(config.world_size) + " through " +
                                              describe_store(config) + " did not complete within " +
                                              std::to_string(config.timeout.count()) +
                                              " ms (a rank missing, or a store that does not answer)");
    }
  }
  std::lock_guard lock(attempt->mu);
  if (*attempt->result) (**attempt->result)->placement_ = placement;
  return std::move(*attempt->result);
}

Result<std::unique_ptr<ProcessGroup>> ProcessGroup::connect_here(const GroupConfig& config) {
  const auto deadline = std::chrono::steady_clock::now() + config.timeout;
  try {
    std::shared_ptr<gloo::rendezvous::Store> base;
    if (config.store == GroupConfig::StoreKind::kCaller) {
      base = config.caller_store;
    } else if (config.store == GroupConfig::StoreKind::kFile) {
      if (mkdir(config.store_path.c_str(), 0700) != 0 && errno != EEXIST) {
        return make_sys_error(errno, "cannot create the rendezvous directory " + config.store_path);
      }
      base = std::make_shared<gloo::rendezvous::FileStore>(config.store_path);
    } else if (config.store == GroupConfig::StoreKind::kTcp) {
      auto tcp = open_tcp_store(config.tcp_host, static_cast<uint16_t>(config.tcp_port), config.tcp_may_serve,
                                config.timeout, config.tcp_secret);
      if (!tcp) {
        return make_error(tcp.error().code, "rendezvous of rank " + std::to_string(config.rank) + " of " +
                                                std::to_string(config.world_size) + " through " +
                                                describe_store(config) + ": " + tcp.error().message);
      }
      base = std::move(*tcp);
    } else {
      base = std::make_shared<BoundedRedisStore>(config.redis_host, config.redis_port, deadline);
    }
    auto claim = claim_rank(config, *base);
    if (!claim) return claim.error();
    gloo::rendezvous::PrefixStore prefixed(config.prefix, *base);
    DeadlineStore store(prefixed, deadline);
    if (Status agreed = agree_on_world(store, config); !agreed) return agreed.error();
    gloo::transport::tcp::attr attr;
    if (!config.hostname.empty()) attr.hostname = config.hostname;
    if (!config.iface.empty()) attr.iface = config.iface;
    if (config.hostname.empty() && config.iface.empty()) attr.hostname = "";  // the host name's address
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(config.rank, config.world_size);
    // The pairs' connections get what is left of the rendezvous's time;
    // later operations, the group's timeout.
    context->setTimeout(time_left(deadline));
    context->connectFullMesh(store, device);
    context->setTimeout(config.timeout);
    std::unique_ptr<ProcessGroup> group(new ProcessGroup(config, std::move(context)));
    group->claim_ = std::move(*claim);
    return group;
  } catch (const std::exception& e) {
    const std::string what = "rendezvous of rank " + std::to_string(config.rank) + " of " +
                             std::to_string(config.world_size) + " through " + describe_store(config);
    const std::string msg = e.what();
    // A store that cannot be reached is not a lost peer: nothing was
    // connected yet, and the cause is the store's address or server.
    if (msg.find("Redis") != std::string::npos && msg.find("timed out") == std::string::npos) {
      return make_error(MLOS_ERR_IO, what + ": " + msg);
    }
    return from_gloo(what, e);
  }
}

bool ProcessGroup::broken() const {
  std::lock_guard lock(broken_mu_);
  return !broken_reason_.empty();
}

void ProcessGroup::mark_broken(const std::string& reason) {
  std::lock_guard lock(broken_mu_);
  if (broken_reason_.empty()) broken_reason_ = reason.empty() ? "unknown failure" : reason;
}

Error ProcessGroup::broken_error(const char* what) const {
  std::lock_guard lock(broken_mu_);
  return make_error(MLOS_ERR_PEER_LOST, std::string(what) + ": the group broke earlier (" + broken_reason_ +
                                            "); every rank must create it again");
}

template <class F>
Status ProcessGroup::guarded(const char* what, F&& f) {
  if (broken()) return broken_error(what);
  try {
    os::SigpipeGuard no_sigpipe;  // Gloo writes on this thread too
    f();
    return Status::Ok();
  } catch (const std::exception& e) {
    Error err = from_gloo(what, e);
    mark_broken(e.what());
    return err;
  }
}

Status ProcessGroup::barrier() {
  return guarded("barrier", [&] {
    gloo::BarrierOptions o(context_);
    o.setTag(next_tag_++);
    o.setTimeout(config_.timeout);
    gloo::barrier(o);
  });
}

Status ProcessGroup::allreduce(void* data, size_t count, DataType type, mlos_reduce_op_t op) {
  // Gloo wants at least one element; a zero-length all-reduce still
  // synchronises the ranks, as callers expect.
  if (count == 0) return barrier();
  Status s = guarded("allreduce", [&] {
    gloo::AllreduceOptions o(context_);
    switch (type) {
      case DataType::kFloat32: set_output<float>(o, data, count, op); break;
      case DataType::kFloat64: set_output<double>(o, data, count, op); break;
      case DataType::kFloat16:
        o.setOutput(static_cast<uint16_t*>(data), count);
        o.setReduceFunction(narrow_reducer<float_to_half, half_to_float>(op));
        break;
      case DataType::kBFloat16:
        o.setOutput(static_cast<uint16_t*>(data), count);
        o.setReduceFunction(narrow_reducer<float_to_bfloat16, bfloat16_to_float>(op));
        break;
      case DataType::kInt32: set_output<int32_t>(o, data, count, op); break;
      case DataType::kInt64: set_output<int64_t>(o, data, count, op); break;
    }
    o.setTag(next_tag_++);
    o.setTimeout(config_.timeout);
    gloo::allreduce(o);
  });
  if (!s || op != MLOS_REDUCE_AVG) return s;
  switch (type) {
    case DataType::kFloat32: divide<float>(data, count, world_size()); break;
    case DataType::kFloat64: divide<double>(data, count, world_size()); break;
    case DataType::kFloat16: divide_narrow<float_to_half, half_to_float>(data, count, world_size()); break;
    case DataType::kBFloat16: divide_narrow<float_to_bfloat16, bfloat16_to_float>(data, count, world_size()); break;
    case DataType::kInt32: divide<int32_t>(data, count, world_size()); break;
    case DataType::kInt64: divide<int64_t>(data, count, world_size()); break;
  }
  return s;
}

Status ProcessGroup::allgather(const void* mine, size_t bytes, void* all) {
  if (bytes == 0) return barrier();
  return guarded("allgather", [&] {
    // In place: this rank's slot of `all` holds its part (memmove: `mine`
    // may be that slot, or overlap it).
    char* slot = static_cast<char*>(all) + static_cast<size_t>(rank()) * bytes;
    if (slot != mine) std::memmove(slot, mine, bytes);
    gloo::AllgatherOptions o(context_);
    o.setOutput(static_cast<char*>(all), bytes * static_cast<size_t>(world_size()));
    o.setTag(next_tag_++);
    o.setTimeout(config_.timeout);
    gloo::allgather(o);
  });
}

Status ProcessGroup::broadcast(void* data, size_t bytes, int root) {
  if (bytes == 0) return barrier();
  return guarded("broadcast", [&] {
    gloo::BroadcastOptions o(context_);
    o.setOutput(static_cast<char*>(data), bytes);
    o.setRoot(root);
    o.setTag(next_tag_++);
    o.setTimeout(config_.timeout);
    gloo::broadcast(o);
  });
}

Status ProcessGroup::gather(const void* mine, size_t bytes, void* all, int root) {
  if (bytes == 0) return barrier();
  return guarded("gather", [&] {
    gloo::GatherOptions o(context_);
    // Gloo never writes the input; its signature takes a non-const pointer.
    o.setInput(static_cast<char*>(const_cast<void*>(mine)), bytes);
    if (rank() == root) o.setOutput(static_cast<char*>(all), bytes * static_cast<size_t>(world_size()));
    o.setRoot(root);
    o.setTag(next_tag_++);
    o.setTimeout(config_.timeout);
    gloo::gather(o);
  });
}

Status ProcessGroup::scatter(const void* all, size_t bytes, void* mine, int root) {
  if (bytes == 0) return barrier();
  return guarded("scatter", [&] {
    gloo::ScatterOptions o(context_);
    if (rank() == root) {
      std::vector<char*> chunks;
      for (int r = 0; r < world_size(); ++r) {
        chunks.push_back(static_cast<char*>(const_cast<void*>(all)) + static_cast<size_t>(r) * bytes);
      }
      o.setInputs(chunks, bytes);
    }
    o.setOutput(static_cast<char*>(mine), bytes);
    o.setRoot(root);
    o.setTag(next_tag_++);
    o.setTimeout(config_.timeout);
    gloo::scatter(o);
  });
}

Status ProcessGroup::alltoall(const void* in, const std::vector<size_t>& send_bytes, void* out,
                              const std::vector<size_t>& recv_bytes) {
  const auto nothing = [](const std::vector<size_t>& v) {
    return std::all_of(v.begin(), v.end(), [](size_t b) { return b == 0; });
  };
  if (nothing(send_bytes) && nothing(recv_bytes)) return barrier();
  return guarded("alltoall", [&] {
    gloo::AlltoallvOptions o(context_);
    // Gloo wants element counts; bytes are elements of one byte. It never
    // writes the input, but its signature takes a non-const pointer.
    o.setInput(static_cast<char*>(const_cast<void*>(in)), std::vector<int64_t>(send_bytes.begin(), send_bytes.end()));
    o.setOutput(static_cast<char*>(out), std::vector<int64_t>(recv_bytes.begin(), recv_bytes.end()));
    o.setTag(next_tag_++);
    o.setTimeout(config_.timeout);
    gloo::alltoallv(o);
  });
}

}  // namespace mlos::collectives
