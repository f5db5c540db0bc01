# N-API addon: one build loads in Node and in VS Code's Electron (no V8/Node ABI dependency).
# Built by scripts/build-native.mjs (npm's "install" script) with node-gyp against Node's own headers.
{
  "targets": [
    {
      "target_name": "memhint_sampler",
      "sources": ["src/addon.cc", "src/sampler.cc", "src/procfs.cc", "src/nvml.cc"],
      "dependencies": ["<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except"],
      "defines": ["NAPI_VERSION=8"],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "libraries": ["-ldl", "-lpthread"],
      "conditions": [
        ["OS!='linux'", {
          # procfs and NVML's libnvidia-ml.so.1 are Linux-only; other platforms use the JS fallback.
          "type": "none"
        }]
      ]
    }
  ]
}
