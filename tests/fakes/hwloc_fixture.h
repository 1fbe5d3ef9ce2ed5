/* SPDX-License-Identifier: Apache-2.0 */
// A topology from an hwloc description ("synthetic:..." or "xml:<file>"),
// for tests of placement logic on machines this one is not. A description
// that does not load fails the calling test and gives an empty topology.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "core/topology.h"
#include "os/hwloc_topology.h"

namespace mlos_test {

inline mlos::Topology hwloc(const std::string& spec) {
  auto src = mlos::os::TopologySource::parse(spec);
  EXPECT_TRUE(src.ok());
  auto t = mlos::os::load_topology(*src);
  EXPECT_TRUE(t.ok()) << spec << ": " << (t.ok() ? "" : t.error().describe());
  return t.ok() ? std::move(t).value() : mlos::Topology();
}

}  // namespace mlos_test
