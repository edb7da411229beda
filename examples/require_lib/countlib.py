# countlib.py: the port of countlib.pl. count.py runs it with require("./countlib.py")
# into its own globals, as Perl's require loads countlib.pl into the script's package:
# datafile, count and NUMBER are the script's names. The imports only make the file
# readable (and lintable) on its own; they bind the same objects the script has.
import os
import sys

from perlcompat import O_CREAT, O_RDWR, OS_ERROR, flock, num, print_, seek, sysopen, tell, truncate

datafile = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/libcount.dat"


def error(message):
    print("Content-Type: text/plain\n")
    print(f"error: {message}")
    sys.exit()


# WWWBoard's shape: the number file stays open and locked after the function returns.
# NUMBER is a global, as Perl's bareword handle is: a local would be closed (and its
# flock released) the moment bump() returned.
def bump():
    global NUMBER, count
    NUMBER = sysopen(datafile, O_RDWR | O_CREAT) or error(f"open: {OS_ERROR}")
    flock(NUMBER, 2) or error(f"flock: {OS_ERROR}")
    count = num(NUMBER.readline())
    count += 1
    seek(NUMBER, 0, 0)
    print_(NUMBER, count)
    truncate(NUMBER, tell(NUMBER))
