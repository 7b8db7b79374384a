// Pinocchio's C++ on one thread, the anchor of bench/batch.py: nanoseconds per state of
// pinocchio::aba, pinocchio::rnea and pinocchio::computeJointTorqueRegressor, each timed in a loop
// over the same states (std::chrono::steady_clock), interleaved, the median of several repeats.
// The calls are those of Pinocchio's own benchmark/timings.cpp (Eigen::VectorXd arguments), with
// Pinocchio header-only: the three algorithms are compiled here, by one compiler with one set of
// flags (see bench/pinocchio_anchor.py).
// Built and run by bench/pinocchio_anchor.py, which checks the results against Pinocchio's Python
// bindings before it reports a number.
//
// Usage: pinocchio_anchor MODEL STATES RESULTS [REPEATS [CHECKED]]
//   MODEL    a pinocchio::Model saved by Python's pin.Model.saveToBinary
//   STATES   little-endian: int64 n, nq, nv, then n rows of q (nq doubles), then n rows each of
//            v, a and tau (nv doubles)
//   RESULTS  written: aba's ddq, rnea's tau and the joint torque regressor (column-major) of
//            each of the first CHECKED states, in that order, as doubles
//   REPEATS  timed loops over all states per algorithm (default 21), after one untimed loop
//   CHECKED  states written to RESULTS (default 20)
// Prints JSON: sizes, the median ns per state of each algorithm, and the sum of each algorithm's
// outputs over all states (a checksum).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "pinocchio/algorithm/aba.hpp"
#include "pinocchio/algorithm/regressor.hpp"
#include "pinocchio/algorithm/rnea.hpp"
#include "pinocchio/multibody.hpp"
#include "pinocchio/serialization.hpp"

using Vectors = std::vector<Eigen::VectorXd>;

struct States
{
  Vectors q, v, a, tau;
};

Vectors read_rows(std::ifstream & file, std::int64_t rows, std::int64_t size)
{
  Vectors out(rows, Eigen::VectorXd(size));
  for (auto & row : out)
    file.read(reinterpret_cast<char *>(row.data()), size * sizeof(double));
  return out;
}

States read_states(const std::string & path, const pinocchio::Model & model)
{
  std::ifstream file(path, std::ios::binary);
  std::int64_t sizes[3];
  file.read(reinterpret_cast<char *>(sizes), sizeof(sizes));
  const auto [n, nq, nv] = sizes;
  if (!file || nq != model.nq || nv != model.nv)
    throw std::runtime_error(path + ": not states of this model (nq " + std::to_string(nq)
                             + ", nv " + std::to_string(nv) + ")");
  States states;
  states.q = read_rows(file, n, nq);
  states.v = read_rows(file, n, nv);
  states.a = read_rows(file, n, nv);
  states.tau = read_rows(file, n, nv);
  if (!file)
    throw std::runtime_error(path + ": shorter than its " + std::to_string(n) + " states");
  return states;
}

// Seconds of one loop of step over the states 0 .. n-1.
template<typename Step>
double loop_seconds(Step step, std::size_t n)
{
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i)
    step(i);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> x)
{
  std::sort(x.begin(), x.end());
  const std::size_t m = x.size() / 2;
  return x.size() % 2 ? x[m] : 0.5 * (x[m - 1] + x[m]);
}

int main(int argc, char ** argv)
{
  if (argc < 4 || argc > 6)
  {
    std::cerr << "usage: " << argv[0] << " MODEL STATES RESULTS [REPEATS [CHECKED]]\n";
    return 2;
  }
  try
  {
    pinocchio::Model model;
    model.loadFromBinary(argv[1]);
    pinocchio::Data data(model);
    const States s = read_states(argv[2], model);
    const std::size_t n = s.q.size();
    const int repeats = argc > 4 ? std::stoi(argv[4]) : 21;
    const std::size_t checked = std::min<std::size_t>(n, argc > 5 ? std::stoul(argv[5]) : 20);
    if (n == 0 || repeats < 1)
      throw std::runtime_error("needs at least one state and one repeat");

    auto aba = [&](std::size_t i) { pinocchio::aba(model, data, s.q[i], s.v[i], s.tau[i]); };
    auto rnea = [&](std::size_t i) { pinocchio::rnea(model, data, s.q[i], s.v[i], s.a[i]); };
    auto regressor = [&](std::size_t i) {
      pinocchio::computeJointTorqueRegressor(model, data, s.q[i], s.v[i], s.a[i]);
    };

    std::vector<double> aba_s, rnea_s, regressor_s;
    for (int r = -1; r < repeats; ++r) // r = -1 warms caches and clock up, untimed
    {
      const double t_aba = loop_seconds(aba, n), t_rnea = loop_seconds(rnea, n),
                   t_regressor = loop_seconds(regressor, n);
      if (r < 0)
        continue;
      aba_s.push_back(t_aba);
      rnea_s.push_back(t_rnea);
      regressor_s.push_back(t_regressor);
    }

    // Untimed: the outputs, summed over all states and written for the first `checked` ones.
    double sum_aba = 0, sum_rnea = 0, sum_regressor = 0;
    std::ofstream results(argv[3], std::ios::binary);
    auto write = [&](const double * x, Eigen::Index size) {
      results.write(reinterpret_cast<const char *>(x), size * sizeof(double));
    };
    for (std::size_t i = 0; i < n; ++i)
    {
      aba(i);
      sum_aba += data.ddq.sum();
      if (i < checked)
        write(data.ddq.data(), data.ddq.size());
      rnea(i);
      sum_rnea += data.tau.sum();
      if (i < checked)
        write(data.tau.data(), data.tau.size());
      regressor(i);
      sum_regressor += data.jointTorqueRegressor.sum();
      if (i < checked)
        write(data.jointTorqueRegressor.data(), data.jointTorqueRegressor.size());
    }
    results.close();
    if (!results)
      throw std::runtime_error(std::string(argv[3]) + ": cannot write the results");

    const double ns = 1e9 / n;
    std::cout << std::setprecision(17) << "{\"nq\": " << model.nq << ", \"nv\": " << model.nv
              << ", \"states\": " << n << ", \"repeats\": " << repeats
              << ", \"checked\": " << checked << ", \"ns\": {\"aba\": " << median(aba_s) * ns
              << ", \"rnea\": " << median(rnea_s) * ns
              << ", \"regressor\": " << median(regressor_s) * ns
              << "}, \"checksum\": {\"aba\": " << sum_aba << ", \"rnea\": " << sum_rnea
              << ", \"regressor\": " << sum_regressor << "}}\n";
  }
  catch (const std::exception & error)
  {
    std::cerr << argv[0] << ": " << error.what() << "\n";
    return 1;
  }
  return 0;
}
