#include "parasim/hardware/cluster_json.hpp"

#include <cmath>
#include <filesystem>
#include <functional>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "support/input_error.hpp"

namespace parasim::hardware {
namespace {

using test_support::input_error;

// A valid two-GPU box; tests break one field at a time.
nlohmann::json box() {
  return nlohmann::json::parse(R"({
    "schema": "parasim.cluster/1",
    "name": "box",
    "devices": [{"name": "gpu0", "kind": "V100-SXM2-32GB"}, {"name": "gpu1", "kind": "v100"}],
    "endpoints": [{"name": "cpu0", "kind": "cpu"}],
    "links": [
      {"name": "l0", "kind": "pcie", "a": "gpu0", "b": "cpu0", "latency_ns": 1000, "bandwidth_gbps": 12},
      {"name": "l1", "kind": "pcie", "a": "gpu1", "b": "cpu0", "latency_ns": 1000, "bandwidth_gbps": 12}
    ]
  })");
}

std::string load_error(const nlohmann::json& j) {
  return input_error([&] { cluster_from_json(j, "c.json"); });
}

TEST(ClusterJson, LoadsAValidFile) {
  Cluster c = cluster_from_json(box(), "c.json");
  EXPECT_EQ(c.num_devices(), 2);
  EXPECT_EQ(c.device(1).kind, "V100-SXM2-32GB");  // aliases are canonicalised
  EXPECT_EQ(c.device(1).memory, 32 * GiB);         // memory defaults to the device spec
  EXPECT_EQ(c.route_summary(0, 1).latency, 2000);
}

TEST(ClusterJson, LargestMemoryOfTheFirstDevices) {
  nlohmann::json j = box();
  j["devices"][0]["memory_bytes"] = 16 * GiB;  // gpu1 keeps the spec's 32 GiB
  const Cluster c = cluster_from_json(j, "c.json");
  EXPECT_EQ(c.largest_memory(0), 0);
  EXPECT_EQ(c.largest_memory(1), 16 * GiB);
  EXPECT_EQ(c.largest_memory(2), 32 * GiB);
  EXPECT_EQ(c.largest_memory(5), 32 * GiB);  // no more devices than the cluster has
}

TEST(ClusterJson, PresetsRoundTripThroughTheFile) {
  for (const auto& name : cluster_preset_names()) {
    Cluster c = make_cluster_preset(name, 2);
    const nlohmann::json j = cluster_to_json(c);
    Cluster back = cluster_from_json(j, "rt.json");
    EXPECT_EQ(dump_json(cluster_to_json(back)), dump_json(j)) << name;
    EXPECT_EQ(back.route(0, back.num_devices() - 1), c.route(0, c.num_devices() - 1)) << name;
  }
  const auto dir = std::filesystem::temp_directory_path() / "parasim_cluster_json_test";
  Cluster c = make_cluster_preset("dgx1-v100");
  save_cluster_file(c, dir / "dgx1.json");
  Cluster back = resolve_cluster((dir / "dgx1.json").string());
  EXPECT_EQ(back.num_links(), c.num_links());
  EXPECT_EQ(input_error([&] { resolve_cluster((dir / "dgx1.json").string(), 2); }),
            (dir / "dgx1.json").string() + ": --nodes applies to presets only; a cluster file lists its own nodes");
  std::filesystem::remove_all(dir);
}

TEST(ClusterJson, BadBandwidthAndLatencyNameTheField) {
  auto j = box();
  j["links"][1]["bandwidth_gbps"] = 0;
  EXPECT_EQ(load_error(j), "c.json: $.links[1].bandwidth_gbps: expected a number > 0, found number 0");
  j["links"][1]["bandwidth_gbps"] = -1;
  EXPECT_EQ(load_error(j), "c.json: $.links[1].bandwidth_gbps: expected a number > 0, found number -1");
  j["links"][1]["bandwidth_gbps"] = "fast";
  EXPECT_EQ(load_error(j), "c.json: $.links[1].bandwidth_gbps: expected a number > 0, found string \"fast\"");
  j = box();
  j["links"][0]["latency_ns"] = -5;
  EXPECT_EQ(load_error(j), "c.json: $.links[0].latency_ns: expected an integer in [0, 10000000000], found number -5");
  j["links"][0]["latency_ns"] = 20'000'000'000LL;
  EXPECT_EQ(load_error(j),
            "c.json: $.links[0].latency_ns: expected an integer in [0, 10000000000], found number 20000000000");
  j = box();
  j["links"][0]["bandwidth_gbps"] = 2e6;
  EXPECT_EQ(load_error(j),
            "c.json: $.links[0].bandwidth_gbps: expected a bandwidth in GB/s between 1e-6 (1 KB/s) and 1e6 (1 PB/s), "
            "found number 2000000.0");
}

TEST(ClusterJson, NcclChannelsPinnedInTheFileOrThePresetNameRoundTrip) {
  auto j = box();
  EXPECT_FALSE(cluster_from_json(j, "c.json").spec().nccl_channels);  // unset: each part's own
  EXPECT_FALSE(cluster_to_json(cluster_from_json(j, "c.json")).contains("nccl_channels"));
  j["nccl_channels"] = 16;
  const Cluster c = cluster_from_json(j, "c.json");
  EXPECT_EQ(c.spec().nccl_channels, 16);
  EXPECT_EQ(cluster_to_json(c)["nccl_channels"], 16);
  EXPECT_EQ(cluster_from_json(cluster_to_json(c), "rt.json").spec().nccl_channels, 16);
  j["nccl_channels"] = 65;
  EXPECT_EQ(load_error(j), "c.json: $.nccl_channels: expected an integer in [0, 64], found number 65");
  j["nccl_channels"] = "many";
  EXPECT_EQ(load_error(j), "c.json: $.nccl_channels: expected an integer, found string \"many\"");
  EXPECT_EQ(make_cluster_preset("dgx-h100:nccl_channels=0").spec().nccl_channels, 0);
  EXPECT_EQ(make_cluster_preset("dgx-h100:fabric=fat-tree,nccl_channels=32", 2).spec().nccl_channels, 32);
  EXPECT_FALSE(make_cluster_preset("dgx-h100").spec().nccl_channels);
  EXPECT_EQ(input_error([] { make_cluster_preset("dgx-h100:nccl_channels=-1"); }),
            "cluster preset \"dgx-h100:nccl_channels=-1\": nccl_channels: expected the channels (SMs) every "
            "collective runs on, in [0, 64], found \"-1\"");
  ClusterSpec spec = make_cluster_preset_spec("dgx-a100", 1);
  spec.nccl_channels = 100;
  EXPECT_EQ(input_error([&] { Cluster{spec}; }), "cluster \"dgx-a100\": nccl_channels must be in [0, 64], found 100");
}

TEST(ClusterJson, StructuralErrors) {
  auto j = box();
  j["links"][0]["b"] = "gpu9";
  EXPECT_EQ(load_error(j), "c.json: $.links[0].b: expected the name of a device or endpoint, found string \"gpu9\"");
  j = box();
  j["devices"][1]["name"] = "gpu0";
  EXPECT_EQ(load_error(j), "c.json: $.devices[1].name: duplicate name \"gpu0\" (also $.devices[0].name)");
  j = box();
  j["endpoints"][0]["name"] = "gpu1";
  EXPECT_EQ(load_error(j), "c.json: $.endpoints[0].name: duplicate name \"gpu1\" (also $.devices[1].name)");
  j = box();
  j["links"][1]["name"] = "l0";
  EXPECT_EQ(load_error(j), "c.json: $.links[1].name: duplicate link name \"l0\" (also $.links[0].name)");
  j = box();
  j["devices"][0]["kind"] = "K80";
  EXPECT_EQ(load_error(j),
            "c.json: $.devices[0].kind: expected a known device kind (V100-SXM2-16GB, V100-SXM2-32GB, P100-SXM2-16GB, "
            "A100-SXM4-40GB, A100-SXM4-80GB, H100-SXM5-80GB, H100-PCIe-80GB, H100-NVL-94GB, H200-SXM-141GB, "
            "B200-SXM-180GB, TITAN-X-Pascal, "
            "GTX-1080, GTX-1080-Ti), "
            "found string \"K80\"");
  j = box();
  j["links"].erase(1);
  EXPECT_EQ(load_error(j),
            "c.json: cluster \"box\": device \"gpu1\" is not connected to device \"gpu0\" by any path of links");
  j = box();
  j["devices"] = nlohmann::json::array();
  EXPECT_EQ(load_error(j), "c.json: $.devices: expected 1 to 1048576 devices, found 0");
  j = box();
  j["devices"][1]["node"] = 2;
  EXPECT_EQ(load_error(j), "c.json: cluster \"box\": node 1 has no devices (nodes must be numbered 0..2 without gaps)");
  j = box();
  j["schema"] = "parasim.cluster/2";
  EXPECT_EQ(load_error(j), "c.json: $.schema: expected \"parasim.cluster/1\", found string \"parasim.cluster/2\"");
}

TEST(ClusterJson, AbsurdDeviceCountsAreRejectedBeforeAnythingIsBuilt) {
  nlohmann::json j = box();
  j["devices"] = nlohmann::json::array();
  for (int i = 0; i < 1'048'577; ++i) j["devices"].push_back(nullptr);
  EXPECT_EQ(load_error(j), "c.json: $.devices: expected 1 to 1048576 devices, found 1048577");
}

TEST(ClusterSpecValidation, ProgrammaticSpecsAreCheckedToo) {
  ClusterSpec s;
  s.name = "x";
  s.devices = {{"a", "h100", 0, 0}, {"b", "h100", 0, 0}};
  s.links = {{"ab", LinkKind::NVLink, 0, 1, 0, GBps{std::nan("")}}};
  EXPECT_EQ(input_error([&] { Cluster c(s); }),
            "cluster \"x\": link \"ab\": bandwidth must be a finite number > 0 GB/s, found nan");
  s.links = {{"ab", LinkKind::NVLink, 0, 1, -1, GBps{1}}};
  EXPECT_EQ(input_error([&] { Cluster c(s); }), "cluster \"x\": link \"ab\": latency must be >= 0 ns, found -1");
  s.links = {{"ab", LinkKind::NVLink, 0, 7, 0, GBps{1}}};
  EXPECT_EQ(input_error([&] { Cluster c(s); }), "cluster \"x\": link \"ab\": connects an unknown endpoint");
  s.devices[1].kind = "tpu";
  EXPECT_EQ(input_error([&] { Cluster c(s); }).substr(0, 37), "unknown device kind \"tpu\"; known kind");
}

}  // namespace
}  // namespace parasim::hardware
