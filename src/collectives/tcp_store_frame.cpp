// SPDX-License-Identifier: Apache-2.0
#include "collectives/tcp_store_frame.h"

#include <cstring>

#include "collectives/tcp_store.h"

namespace mlos::collectives {

namespace {

using tcpstore::Query;

// A request's fields after its query byte.
enum class Field : uint8_t {
  kU32,
  kU64,
  kKey,    // u64 length, at most kMaxKeyBytes
  kValue,  // u64 length, at most kMaxValueBytes
  kKeys,   // u64 count (at most kMaxKeysPerRequest), that many keys
  kPairs,  // u64 count (at most kMaxKeysPerRequest), that many key, value
  kEnd,
};

struct Shape {
  Field f[4];
};

// nullptr: a query this server does not know.
const Shape* shape_of(uint8_t q) {
  using F = Field;
  static const Shape u32{{F::kU32, F::kEnd}}, none{{F::kEnd}}, key{{F::kKey, F::kEnd}},
      key_value{{F::kKey, F::kValue, F::kEnd}}, compare_set{{F::kKey, F::kValue, F::kValue, F::kEnd}},
      key_u64{{F::kKey, F::kU64, F::kEnd}}, keys{{F::kKeys, F::kEnd}}, pairs{{F::kPairs, F::kEnd}},
      value{{F::kValue, F::kEnd}};
  switch (static_cast<Query>(q)) {
    case Query::kValidate:
    case Query::kPing: return &u32;
    case Query::kSet:
    case Query::kAppend:
    case Query::kQueuePush: return &key_value;
    case Query::kCompareSet: return &compare_set;
    case Query::kGet:
    case Query::kDeleteKey:
    case Query::kQueuePop:
    case Query::kQueueLen: return &key;
    case Query::kAdd:
    case Query::kBarrier: return &key_u64;
    case Query::kCheck:
    case Query::kWait:
    case Query::kMultiGet: return &keys;
    case Query::kMultiSet: return &pairs;
    case Query::kGetNumKeys:
    case Query::kCancelWait:
    case Query::kListKeys: return &none;
    case Query::kMlosAuth: return &value;
  }
  return nullptr;
}

}  // namespace

bool TcpStoreFrame::have(size_t k, size_t available) {
  if (available - pos_ >= k) return true;
  if (k > tcpstore::kMaxRequestBytes || pos_ > tcpstore::kMaxRequestBytes - k) {
    why_ = "a request over " + std::to_string(tcpstore::kMaxRequestBytes >> 20) + " MiB";
    return false;
  }
  need_ = pos_ + k;
  return false;
}

TcpStoreFrame::State TcpStoreFrame::refuse(std::string why) {
  why_ = std::move(why);
  return State::kRefused;
}

TcpStoreFrame::State TcpStoreFrame::scan(const char* p, size_t n) {
  const auto stalled = [&] { return why_.empty() ? State::kPartial : State::kRefused; };
  if (field_ < 0) {
    if (!have(1, n)) return stalled();
    query_ = static_cast<uint8_t>(p[0]);
    if (!shape_of(query_)) return refuse("query " + std::to_string(query_) + ", which this server does not know");
    pos_ = 1;
    field_ = 0;
  }
  const Shape& shape = *shape_of(query_);
  // A length-prefixed field, taken whole or not at all.
  const auto bytes = [&](uint64_t limit, const char* what) -> bool {
    if (!have(8, n)) return false;
    uint64_t len = 0;
    std::memcpy(&len, p + pos_, 8);
    if (len > limit) {
      why_ = std::string(what) + " of " + std::to_string(len) + " bytes";
      return false;
    }
    if (!have(8 + len, n)) return false;
    pos_ += 8 + len;
    return true;
  };
  for (;;) {
    ++steps_;
    const Field f = shape.f[field_];
    switch (f) {
      case Field::kEnd:
        return State::kWhole;
      case Field::kU32:
      case Field::kU64: {
        const size_t w = f == Field::kU32 ? 4 : 8;
        if (!have(w, n)) return stalled();
        pos_ += w;
        break;
      }
      case Field::kKey:
        if (!bytes(tcpstore::kMaxKeyBytes, "a key")) return stalled();
        break;
      case Field::kValue:
        if (!bytes(tcpstore::kMaxValueBytes, "a value")) return stalled();
        break;
      case Field::kKeys:
      case Field::kPairs: {
        if (!in_item_) {
          if (!have(8, n)) return stalled();
          uint64_t count = 0;
          std::memcpy(&count, p + pos_, 8);
          if (count > tcpstore::kMaxKeysPerRequest) return refuse(std::to_string(count) + " keys in one request");
          pos_ += 8;
          items_ = f == Field::kPairs ? 2 * count : count;
          in_item_ = true;
        }
        // A pair list alternates key and value: with an even number of
        // entries left, the next is a key.
        while (items_ > 0) {
          ++steps_;
          const bool value = f == Field::kPairs && items_ % 2 == 1;
          if (!(value ? bytes(tcpstore::kMaxValueBytes, "a value") : bytes(tcpstore::kMaxKeyBytes, "a key"))) {
            return stalled();
          }
          --items_;
        }
        in_item_ = false;
        break;
      }
    }
    ++field_;
  }
}

}  // namespace mlos::collectives
