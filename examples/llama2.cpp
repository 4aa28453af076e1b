// llama2: runs a llama2.c checkpoint (Karpathy's llama2.c format: TinyStories' stories15M,
// stories42M, stories110M, ...) with attend, with run.c's command line, output and sampling.
//
//   llama2 stories15M.bin -z tokenizer.bin -t 0 -n 256 -i "Once upon a time"
//
// The model's shapes are compile-time constants: the binary is built for a list of configs
// (examples/llama2/model.hpp) and runs the one the checkpoint's header names.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>

#include "llama2/model.hpp"
#include "llama2/sampler.hpp"
#include "llama2/tokenizer.hpp"

namespace {

using compiled = std::tuple<llama2::stories15M, llama2::stories42M, llama2::stories110M, llama2::gqa512>;

struct options {
    const char* checkpoint = nullptr;
    const char* tokenizer = "tokenizer.bin";
    float temperature = 1.0f, topp = 0.9f;
    unsigned long long seed = 0;
    int steps = 256;
    const char* prompt = "";
    bool bf16 = false;  // weights and KV cache held in bf16
};

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "Usage:   llama2 <checkpoint> [options]\n"
                 "Example: llama2 model.bin -n 256 -i \"Once upon a time\"\n"
                 "Options:\n"
                 "  -t <float>  temperature in [0,inf], default 1.0\n"
                 "  -p <float>  p value in top-p (nucleus) sampling in [0,1], default 0.9\n"
                 "  -s <int>    random seed, default time(NULL)\n"
                 "  -n <int>    number of steps to run for, default 256. 0 = max_seq_len\n"
                 "  -i <string> input prompt\n"
                 "  -z <string> optional path to custom tokenizer\n"
                 "  -m <string> mode: generate (the only one here)\n"
                 "  -w <string> weights and KV cache held as f32 (default) or bf16 (rounded at load)\n");
    std::exit(EXIT_FAILURE);
}

[[noreturn]] void refuse(char flag, const char* v, const char* what) {
    std::fprintf(stderr, "llama2: -%c takes %s, not \"%s\"\n", flag, what, v);
    usage();
}

// A flag's whole value as a number T holds (a float may be inf, as run.c's strtof reads it), else
// a message and the usage (run.c's atoi and strtof take "abc" as 0 silently, and 3000000000 or
// 1e39 out of range).
template <class T>
T number(char flag, const char* v) {
    char* end = nullptr;
    errno = 0;
    if constexpr (std::is_integral_v<T>) {
        const long long x = std::strtoll(v, &end, 10);
        if (end == v || *end != '\0') refuse(flag, v, "an integer");
        if (errno == ERANGE || x < std::numeric_limits<T>::lowest() || x > std::numeric_limits<T>::max())
            refuse(flag, v, "an integer within int's range");
        return static_cast<T>(x);
    } else {
        const double x = std::strtod(v, &end);  // (an underflow to 0 or a subnormal is that value)
        if (end == v || *end != '\0' || std::isnan(x)) refuse(flag, v, "a number");
        if ((errno == ERANGE && std::isinf(x)) || (std::isfinite(x) && std::abs(x) > double(std::numeric_limits<T>::max())))
            refuse(flag, v, "a number within float's range (or inf)");
        return static_cast<T>(x);
    }
}

// run.c's parsing: flag-value pairs after the checkpoint, each flag a dash and one letter; a
// negative temperature or step count and a top-p outside [0, 1] are clamped as run.c clamps them.
options parse(int argc, char** argv) {
    options o;
    if (argc < 2) usage();
    o.checkpoint = argv[1];
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 >= argc || argv[i][0] != '-' || std::strlen(argv[i]) != 2) usage();
        const char* v = argv[i + 1];
        switch (argv[i][1]) {
        case 't': o.temperature = number<float>('t', v); break;
        case 'p': o.topp = number<float>('p', v); break;
        case 's': o.seed = static_cast<unsigned long long>(number<int>('s', v)); break;
        case 'n': o.steps = number<int>('n', v); break;
        case 'i': o.prompt = v; break;
        case 'z': o.tokenizer = v; break;
        case 'm':
            if (std::strcmp(v, "generate") != 0) usage();
            break;
        case 'w':
            if (std::strcmp(v, "bf16") != 0 && std::strcmp(v, "f32") != 0) usage();
            o.bf16 = std::strcmp(v, "bf16") == 0;
            break;
        default: usage();
        }
    }
    if (o.seed == 0) o.seed = static_cast<unsigned long long>(std::time(nullptr));
    if (o.temperature < 0) o.temperature = 0;
    if (o.topp < 0 || o.topp > 1) o.topp = 0.9f;
    if (o.steps < 0) o.steps = 0;
    return o;
}

[[noreturn]] void fail(const std::string& message) {
    std::fprintf(stderr, "llama2: %s\n", message.c_str());
    std::exit(EXIT_FAILURE);
}

// While a file is mapped, a read of a page that another process has cut off its end raises
// SIGBUS: that ends the program with a message naming the file, not a crash.
char bus_error_message[1024];
std::size_t bus_error_length = 0;
extern "C" void on_bus_error(int) {
    [[maybe_unused]] const auto n = ::write(STDERR_FILENO, bus_error_message, bus_error_length);
    ::_exit(EXIT_FAILURE);
}

// A read-only mapping of a whole file.
class mapped_file {
public:
    explicit mapped_file(const char* path) {
        const int fd = ::open(path, O_RDONLY);
        if (fd < 0) fail(std::string("cannot open ") + path + ": " + std::strerror(errno));
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(fd);
            fail(std::string(path) + " is not a readable regular file");
        }
        size_ = static_cast<std::size_t>(st.st_size);
        if (size_ > 0) {
            void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
            if (p == MAP_FAILED) {
                ::close(fd);
                fail(std::string("cannot map ") + path + ": " + std::strerror(errno));
            }
            data_ = static_cast<const std::byte*>(p);
            guard(path);
        }
        ::close(fd);
    }
    ~mapped_file() { release(); }
    // Unmaps the file (the model has copied what it needs).
    void release() {
        if (data_ == nullptr) return;
        ::munmap(const_cast<std::byte*>(data_), size_);
        ::sigaction(SIGBUS, &previous_, nullptr);
        data_ = nullptr;
        size_ = 0;
    }
    mapped_file(const mapped_file&) = delete;
    mapped_file& operator=(const mapped_file&) = delete;
    std::span<const std::byte> bytes() const { return {data_, size_}; }

private:
    void guard(const char* path) {
        const int n = std::snprintf(bus_error_message, sizeof bus_error_message,
                                    "llama2: %s became shorter while it was read (another process changed it)\n", path);
        bus_error_length = std::min(sizeof bus_error_message - 1, static_cast<std::size_t>(std::max(n, 0)));
        struct sigaction action {};
        action.sa_handler = on_bus_error;
        sigemptyset(&action.sa_mask);
        ::sigaction(SIGBUS, &action, &previous_);
    }
    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
    struct sigaction previous_ {};
};

long long now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// run.c's generation loop: the prompt's tokens are forced, then sampled; printed as they come.
template <class Model>
void generate(Model& m, const llama2::tokenizer& tok, llama2::sampler& sampler, const options& o, int seq_len) {
    const std::vector<int> prompt = llama2::encode(tok, o.prompt, true, false);
    const int steps = (o.steps == 0 || o.steps > seq_len) ? seq_len : o.steps;
    long long start = 0;
    int token = prompt[0], pos = 0;
    while (pos < steps) {
        const float* logits = m.forward(token, pos);
        const int next = pos + 1 < static_cast<int>(prompt.size()) ? prompt[static_cast<std::size_t>(pos) + 1]
                                                                   : llama2::sample(sampler, const_cast<float*>(logits));
        ++pos;
        if (next == 1) break;  // BOS ends a sequence
        llama2::safe_print(llama2::decode(tok, token, next), stdout);
        std::fflush(stdout);
        token = next;
        if (start == 0) start = now_ms();
    }
    std::printf("\n");
    if (pos > 1) std::fprintf(stderr, "achieved tok/s: %f\n", (pos - 1) / static_cast<double>(now_ms() - start) * 1000.0);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) fail(std::string("cannot write the text: ") + std::strerror(errno));
}

template <class C, class T>
void run(mapped_file& file, const llama2::header& h, const options& o) {
    auto m = attend::make_huge<llama2::model<C, T>>();  // weights and caches stream from huge pages
    if (std::string e = m->load(file.bytes(), h.shared_classifier); !e.empty()) fail(std::string(o.checkpoint) + " " + e);
    file.release();
    llama2::tokenizer tok;
    if (std::string e = llama2::load_tokenizer(tok, o.tokenizer, static_cast<int>(C::vocab)); !e.empty()) fail(e);
    llama2::sampler sampler{static_cast<int>(C::vocab), o.temperature, o.topp, o.seed, {}};
    generate(*m, tok, sampler, o, static_cast<int>(C::seq_len));
}

template <class... C>
std::string names(std::tuple<C...>*) {
    std::string s;
    ((s += "\n  " + llama2::header{C::header[0], C::header[1], C::header[2], C::header[3], C::header[4], C::header[5], C::header[6]}.text()), ...);
    return s;
}

template <class... C>
bool dispatch(std::tuple<C...>*, mapped_file& file, const llama2::header& h, const options& o) {
    return ((h.is<C>() ? (o.bf16 ? run<C, attend::bf16>(file, h, o) : run<C, float>(file, h, o), true) : false) || ...);
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    mapped_file file(o.checkpoint);
    llama2::header h;
    if (std::string e = llama2::parse_header(file.bytes(), h); !e.empty()) fail(std::string(o.checkpoint) + " " + e);
    if (!dispatch(static_cast<compiled*>(nullptr), file, h, o))
        fail(std::string(o.checkpoint) + " has the config " + h.text() + ", which this binary is not built for; it runs" +
             names(static_cast<compiled*>(nullptr)));
    return 0;
}
