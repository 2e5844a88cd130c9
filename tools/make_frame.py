#!/usr/bin/env python3
"""The benchmark frame both sides read: a photo resized (PIL bilinear) to WxH, saved as raw RGB8
(rows packed, no header), so `warpstream bench --frame` and bench/peers/pytorch_peer.py --frame get the
same bytes.   python3 tools/make_frame.py chelsea.png 1920 1080 frame_1920x1080.rgb
"""
import sys

import numpy as np
from PIL import Image


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    src, w, h, dst = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    img = Image.open(src).convert("RGB").resize((w, h), Image.BILINEAR)
    a = np.asarray(img, dtype=np.uint8)
    assert a.shape == (h, w, 3)
    a.tofile(dst)
    print(f"wrote {dst}: {w}x{h} RGB8 from {src}")


if __name__ == "__main__":
    main()
