# Copyright 2021 ETH Zurich and the NPBench authors. All rights reserved.

import numpy as np

# No initialization needed
