// NameIndex<T>: pointers to objects, found by the name the object carries
// (T::name(), a string). It owns nothing: the objects live elsewhere (the
// ledger's node map) at stable addresses.
//
// Why not std::unordered_map<std::string_view, T*>: the extender's filter
// looks up thousands of node names per request, and a chained map walks a
// list of heap nodes per lookup. This is open addressing with linear probing
// over (hash, pointer) pairs: one cache line per probe, the full hash
// compared before the name. The table is a power of two, at most half full;
// erase shifts the rest of the probe run back, so there are no tombstones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace fracpack::scheduling {

template <class T>
class NameIndex {
 public:
  // Adds `object` under its name, or points that name at it if present.
  void insert(T* object) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const std::string_view name = object->name();
    const uint64_t h = std::hash<std::string_view>{}(name);
    const size_t mask = slots_.size() - 1;
    size_t i = h & mask;
    while (slots_[i].object != nullptr) {
      if (slots_[i].hash == h && slots_[i].object->name() == name) {
        slots_[i].object = object;
        return;
      }
      i = (i + 1) & mask;
    }
    slots_[i] = Slot{h, object};
    ++size_;
  }

  // Forgets `name`; nothing when it is absent.
  void erase(std::string_view name) {
    if (slots_.empty()) return;
    const uint64_t h = std::hash<std::string_view>{}(name);
    const size_t mask = slots_.size() - 1;
    size_t i = h & mask;
    while (slots_[i].object != nullptr && !(slots_[i].hash == h && slots_[i].object->name() == name)) i = (i + 1) & mask;
    if (slots_[i].object == nullptr) return;
    // Backward-shift deletion: later entries of the probe run move up, so no
    // tombstones are needed.
    size_t hole = i;
    for (size_t j = (hole + 1) & mask; slots_[j].object != nullptr; j = (j + 1) & mask) {
      const size_t home = slots_[j].hash & mask;
      // Move j into the hole if its home is not in (hole, j] cyclically.
      const bool between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
      if (!between) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --size_;
  }

  // The object named `name`, or null.
  T* find(std::string_view name) const {
    if (slots_.empty()) return nullptr;
    const uint64_t h = std::hash<std::string_view>{}(name);
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask; slots_[i].object != nullptr; i = (i + 1) & mask) {
      if (slots_[i].hash == h && slots_[i].object->name() == name) return slots_[i].object;
    }
    return nullptr;
  }

  size_t size() const { return size_; }
  // Slots in the table (a power of two; 0 before the first insert).
  size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    uint64_t hash = 0;
    T* object = nullptr;
  };

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.object == nullptr) continue;
      size_t i = s.hash & mask;
      while (slots_[i].object != nullptr) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;  // capacity a power of two, at most half full
  size_t size_ = 0;
};

}  // namespace fracpack::scheduling
