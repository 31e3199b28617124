#pragma once
// nginx (Debian's nginx-light) as a real HTTP server for the http workload's tests and
// bench/http_bench: one process (no master) or a master and workers, its files in a directory
// of the caller's.
#include <fstream>
#include <string>

#include "core/process.hpp"

namespace rig::testing {

struct nginx_files {
  std::string conf;  // the nginx.conf written
  // Serves `dir`/www: index.html (612 bytes, like nginx's own page) and 4k.bin; /hello
  // answers from the config without touching a file.
  // workers > 1: a master and that many worker processes (nginx's usual shape), else one process.
  static nginx_files write(const std::string& dir, uint16_t port, int workers = 1) {
    std::filesystem::create_directories(dir + "/www");
    std::ofstream(dir + "/www/index.html") << std::string(611, 'i') << "\n";
    std::ofstream(dir + "/www/4k.bin") << std::string(4096, 'k');
    nginx_files f{dir + "/nginx.conf"};
    std::ofstream c(f.conf);
    c << "worker_processes " << workers << ";\ndaemon off;\nmaster_process " << (workers > 1 ? "on" : "off")
      << ";\npid " << dir << "/nginx.pid;\n"
      << "error_log " << dir << "/error.log warn;\nevents { worker_connections 4096; }\nhttp {\n"
      << "  access_log off;\n  keepalive_requests 1000000;\n"
      << "  client_body_temp_path " << dir << "/body;\n  proxy_temp_path " << dir << "/proxy;\n"
      << "  fastcgi_temp_path " << dir << "/fastcgi;\n  uwsgi_temp_path " << dir << "/uwsgi;\n"
      << "  scgi_temp_path " << dir << "/scgi;\n"
      << "  server {\n    listen 127.0.0.1:" << port << " backlog=4096;\n    root " << dir << "/www;\n"
      << "    location = /hello { return 200 \"hello\\n\"; }\n  }\n}\n";
    return f;
  }
  std::vector<std::string> argv(const std::string& nginx) const { return {nginx, "-c", conf, "-e", "stderr"}; }
  // A scenario's [target] table that runs it as rig's command target on `port`.
  std::string target_toml(const std::string& nginx, uint16_t port) const {
    return "[target]\nkind = \"command\"\nrun = [\"" + nginx + "\", \"-c\", \"" + conf +
           "\", \"-e\", \"stderr\"]\nport = " + std::to_string(port) + "\n";
  }
};

}  // namespace rig::testing
