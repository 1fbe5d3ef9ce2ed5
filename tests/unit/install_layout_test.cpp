// SPDX-License-Identifier: Apache-2.0
// Where each part of mlOS is looked for from the running binary's real
// directory (core/install_layout.h): an installed prefix (any prefix, a
// multiarch libdir), the Python package, a build tree.
#include "core/install_layout.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace mlos {
namespace {

const InstallDirs kPlain{"bin", "sbin", "lib", "libexec"};
const InstallDirs kDebian{"bin", "sbin", "lib/x86_64-linux-gnu", "libexec"};

TEST(InstallLayout, PrefixOfStripsTheInstallDirectory) {
  EXPECT_EQ(prefix_of("/opt/x/bin", "bin"), "/opt/x");
  EXPECT_EQ(prefix_of("/usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu"), "/usr");
  EXPECT_EQ(prefix_of("/bin", "bin"), "");  // the root
  EXPECT_EQ(prefix_of("/opt/xbin", "bin"), std::nullopt);  // a suffix of a name is not a directory
  EXPECT_EQ(prefix_of("/opt/x/bin", ""), std::nullopt);
  EXPECT_EQ(prefix_of("/opt/x/bin", "/usr/bin"), std::nullopt);  // configured absolute: never moves
}

TEST(InstallLayout, FromAnyInstalledPrefixEveryBinaryFindsTheSameParts) {
  // mlos in bin/, mlosd in sbin/, libmlos in lib/: one prefix, whatever it is.
  for (const std::string dir : {"/home/u/mlos/bin", "/home/u/mlos/sbin", "/home/u/mlos/lib"}) {
    EXPECT_EQ(install_part_candidates(InstallPart::kPolicyHost, dir, kPlain).front(),
              "/home/u/mlos/libexec/mlos/mlos-policyhost") << dir;
    EXPECT_EQ(install_part_candidates(InstallPart::kDataloadHelper, dir, kPlain).front(),
              "/home/u/mlos/libexec/mlos/mlos-dataload") << dir;
    EXPECT_EQ(install_part_candidates(InstallPart::kPolicyDir, dir, kPlain).front(), "/home/u/mlos/lib/mlos/policies")
        << dir;
    EXPECT_EQ(install_part_candidates(InstallPart::kGpushareLibrary, dir, kPlain).front(),
              "/home/u/mlos/lib/mlos/libmlos-gpushare.so") << dir;
    EXPECT_EQ(install_part_candidates(InstallPart::kDaemon, dir, kPlain).front(), "/home/u/mlos/sbin/mlosd") << dir;
  }
}

TEST(InstallLayout, DebiansMultiarchLibdirIsTwoLevelsBelowThePrefix) {
  EXPECT_EQ(install_part_candidates(InstallPart::kPolicyHost, "/usr/lib/x86_64-linux-gnu", kDebian).front(),
            "/usr/libexec/mlos/mlos-policyhost");
  EXPECT_EQ(install_part_candidates(InstallPart::kPolicyDir, "/usr/bin", kDebian).front(),
            "/usr/lib/x86_64-linux-gnu/mlos/policies");
}

TEST(InstallLayout, ThePythonPackageKeepsItsPartsInMlosTrainingMlos) {
  const std::string w = "/v/lib/python3.11/site-packages/mlos_training";
  // libmlos.so.0 lies in mlos_training/, the CLI in mlos_training/mlos/.
  for (const std::string& dir : {w, w + "/mlos"}) {
    const auto host = install_part_candidates(InstallPart::kPolicyHost, dir, kPlain);
    EXPECT_NE(std::find(host.begin(), host.end(), w + "/mlos/mlos-policyhost"), host.end()) << dir;
    const auto policies = install_part_candidates(InstallPart::kPolicyDir, dir, kPlain);
    EXPECT_NE(std::find(policies.begin(), policies.end(), w + "/mlos/policies"), policies.end()) << dir;
  }
  // Another directory named mlos is not the package's.
  for (const auto& c : install_part_candidates(InstallPart::kPolicyHost, "/srv/mlos", kPlain)) {
    EXPECT_NE(c, "/srv/mlos/mlos-policyhost");
  }
}

TEST(InstallLayout, ABuildTreeKeepsProgramsInBinAndPoliciesBeside) {
  for (const std::string dir : {"/w/build/bin", "/w/build/lib"}) {
    const auto host = install_part_candidates(InstallPart::kPolicyHost, dir, kPlain);
    EXPECT_NE(std::find(host.begin(), host.end(), "/w/build/bin/mlos-policyhost"), host.end()) << dir;
    const auto policies = install_part_candidates(InstallPart::kPolicyDir, dir, kPlain);
    EXPECT_NE(std::find(policies.begin(), policies.end(), "/w/build/policies"), policies.end()) << dir;
    const auto gpushare = install_part_candidates(InstallPart::kGpushareLibrary, dir, kPlain);
    EXPECT_NE(std::find(gpushare.begin(), gpushare.end(), "/w/build/lib/libmlos-gpushare.so"), gpushare.end()) << dir;
    const auto daemon = install_part_candidates(InstallPart::kDaemon, dir, kPlain);
    EXPECT_NE(std::find(daemon.begin(), daemon.end(), "/w/build/bin/mlosd"), daemon.end()) << dir;
  }
}

TEST(InstallLayout, ADirectoryOfNoLayoutHasNoCandidatesAndNoneRepeats) {
  EXPECT_TRUE(install_part_candidates(InstallPart::kPolicyHost, "/opt/somewhere", kPlain).empty());
  const auto c = install_part_candidates(InstallPart::kPolicyHost, "/usr/bin", kPlain);
  for (size_t i = 0; i < c.size(); ++i) {
    for (size_t j = i + 1; j < c.size(); ++j) EXPECT_NE(c[i], c[j]);
  }
  // An install directory configured absolute gives no install candidate.
  const InstallDirs absolute_libexec{"bin", "sbin", "lib", ""};
  for (const auto& path : install_part_candidates(InstallPart::kPolicyHost, "/opt/x/bin", absolute_libexec)) {
    EXPECT_EQ(path.find("/opt/x/libexec"), std::string::npos) << path;
  }
}

}  // namespace
}  // namespace mlos
