// attend/nn.hpp — model building on top of attend: layers (nn/layers.hpp) and reflected weight
// structs (nn/weights.hpp). Separate from attend.hpp so that code using only expressions does
// not pay for the reflection headers' compile time.
#pragma once

#include "attend.hpp"
#include "nn/decoder.hpp"
#include "nn/layers.hpp"
#include "nn/weights.hpp"
