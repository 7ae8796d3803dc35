#include <iostream>

int main() {
  std::cout << "{\"command\": \"version\", \"version\": \"" DPSTATS_VERSION "\"}\n";
  return 0;
}
