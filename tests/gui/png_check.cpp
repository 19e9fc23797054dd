// Whether a screenshot shows a rendered page: the expected size, many colours and enough ink (not blank, not a
// single-colour error page). Usage: png_check FILE.png WIDTH HEIGHT; prints what it measured; exit 1 when not.
#include <QImage>

#include <cstdio>
#include <unordered_set>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s FILE.png WIDTH HEIGHT\n", argv[0]);
    return 2;
  }
  const QImage image(QString::fromLocal8Bit(argv[1]));
  if (image.isNull()) {
    std::printf("%s: not a readable image\n", argv[1]);
    return 1;
  }
  const int want_w = std::atoi(argv[2]), want_h = std::atoi(argv[3]);
  const QRgb background = image.pixel(0, 0);
  std::unordered_set<QRgb> colours;
  long ink = 0;  // pixels that differ from the top-left corner's colour
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) {
      const QRgb c = image.pixel(x, y);
      colours.insert(c);
      ink += c != background;
    }
  const double ink_share = double(ink) / (double(image.width()) * image.height());
  std::printf("%s: %dx%d, %zu colours, %.1f %% ink\n", argv[1], image.width(), image.height(), colours.size(),
              100 * ink_share);
  const bool ok = image.width() == want_w && image.height() == want_h && colours.size() >= 64 && ink_share >= 0.02;
  return ok ? 0 : 1;
}
