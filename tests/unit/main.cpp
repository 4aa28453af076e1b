// The one Boost.Test module of the unit tests (linked library, not header-only).
#define BOOST_TEST_MODULE attend
#include <boost/test/unit_test.hpp>
