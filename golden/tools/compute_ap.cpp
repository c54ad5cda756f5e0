// compute_ap.cpp -- retrieval-conformance's own build of the Oxford/Paris Buildings
// evaluation tool, written from its specification (CONVENTIONS.md section 5), not copied.
//
//   usage:  compute_ap GTQUERY RANKEDLIST
//
// GTQUERY is a path prefix: the ground truth is read from GTQUERY_good.txt,
// GTQUERY_ok.txt and GTQUERY_junk.txt; RANKEDLIST holds the ranked image names, best
// first.  Every file holds one name per line, taken raw: lines are split on '\n' only, so
// a '\r' or a trailing space stays part of the name, and an empty line is a name.
//
// What is computed (the behaviour of the original tool, which the suite's golden values
// and rc.oxford_ap reproduce to the printed digit):
//   * positives = the SET of good and ok names (duplicates collapse);
//   * a ranked name that is junk is skipped before anything else (it takes no rank), even
//     when it is also a positive -- it still counts in |positives|;
//   * a ranked name that appears several times is counted every time;
//   * trapezoid AP: at every non-junk rank r (1-based), with h hits so far,
//         recall_r    = h / |positives|                   (float / float)
//         precision_r = h / r          (quotient in double, then stored as a float)
//         ap         += (recall_r - recall_{r-1}) * ((precision_{r-1} + precision_r) / 2.0)
//     starting from recall_0 = 0, precision_0 = 1, ap = 0.  All three are `float`
//     variables; the product and the sum are evaluated in double and rounded back to
//     float on every assignment, exactly as the C++ promotion rules say.  Reproducing
//     the printed digits needs this precise order of float and double operations.
//   * an empty positive set makes recall 0/0 = NaN, printed "-nan" on x86-64 glibc, as
//     soon as one non-junk name is ranked; with no non-junk name the result is 0;
//   * output: the float through std::cout's default formatting (6 significant digits,
//     like printf "%g"), then a newline.
// Errors, as the original: a file that cannot be opened prints "File <path> not found!"
// on stderr and exits with status 255 (the ranked list is opened first, then good, ok,
// junk); a wrong argument count prints the usage line on stdout and exits with 255.
//
// Build: g++ -O2 -o compute_ap compute_ap.cpp   (standard C++ only, no other flags)

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

namespace {

const int kFailureStatus = 255;  // what exit(-1) leaves in the status byte

typedef std::vector<std::string> NameList;
typedef std::set<std::string> NameSet;

// Every line of `path` as std::getline produces them; exits when the file cannot be opened.
NameList read_names(const std::string& path) {
    std::ifstream stream(path.c_str());
    if (!stream.good()) {
        std::cerr << "File " << path << " not found!\n";
        std::exit(kFailureStatus);
    }
    NameList names;
    std::string line;
    while (std::getline(stream, line)) {
        names.push_back(line);
    }
    return names;
}

void add_all(NameSet& into, const NameList& names) {
    for (NameList::const_iterator it = names.begin(); it != names.end(); ++it) {
        into.insert(*it);
    }
}

bool contains(const NameSet& set, const std::string& name) {
    return set.find(name) != set.end();
}

// Trapezoid average precision in the original's float arithmetic (see the header).
float oxford_average_precision(const NameSet& positives, const NameSet& junk,
                               const NameList& ranking) {
    const float n_positives = static_cast<float>(positives.size());
    float ap = 0.0f;
    float previous_recall = 0.0f;
    float previous_precision = 1.0f;
    std::size_t hits = 0;
    std::size_t ranked = 0;  // non-junk names seen before the current one
    for (NameList::const_iterator it = ranking.begin(); it != ranking.end(); ++it) {
        if (contains(junk, *it)) {
            continue;
        }
        if (contains(positives, *it)) {
            ++hits;
        }
        // size_t / float: the division happens in float.
        const float recall = hits / n_positives;
        // size_t / double: the quotient is a double, rounded to float by the assignment.
        const float precision = hits / (ranked + 1.0);
        // (float - float) * ((float + float) / 2.0): the difference and the sum are floats,
        // the halving, the product and the accumulation are doubles; `ap` is a float again.
        ap += (recall - previous_recall) * ((previous_precision + precision) / 2.0);
        previous_recall = recall;
        previous_precision = precision;
        ++ranked;
    }
    return ap;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cout << "Usage: ./compute_ap [GROUNDTRUTH QUERY] [RANKED LIST]\n";
        return kFailureStatus;
    }
    const std::string gt_prefix = argv[1];
    const NameList ranking = read_names(argv[2]);
    NameSet positives;
    add_all(positives, read_names(gt_prefix + "_good.txt"));
    add_all(positives, read_names(gt_prefix + "_ok.txt"));
    NameSet junk;
    add_all(junk, read_names(gt_prefix + "_junk.txt"));

    const float ap = oxford_average_precision(positives, junk, ranking);
    std::cout << ap << "\n";
    return 0;
}
