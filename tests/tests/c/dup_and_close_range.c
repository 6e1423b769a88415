/*
 * Descriptor calls on a device file the preload library serves: a dup of the device fd is
 * the device too; close_range of the original leaves the dup working; once every fd of
 * the device is gone, a file opened at a freed number is an ordinary file again; dup2 onto
 * a device fd makes it the other file. (A garbage command on the device is EINVAL; on an
 * ordinary file the bytes are written.) Prints "dup and close_range ok" on success.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static const char garbage[4] = { 1, 2, 3, 4 };

/* True if `fd` answers as the device: a malformed command is refused with EINVAL. */
static int is_device(int fd)
{
	errno = 0;
	return write(fd, garbage, sizeof garbage) < 0 && errno == EINVAL;
}

int main(void)
{
	char path[] = "/tmp/ferrodat-dupXXXXXX";
	int fd = open("/dev/infiniband/uverbs0", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		FAIL("open /dev/infiniband/uverbs0: %s", strerror(errno));
	if (!is_device(fd))
		FAIL("the device fd does not answer as the device");
	int d = dup(fd);
	if (d < 0 || !is_device(d))
		FAIL("a dup of the device fd is not the device");
	if (close_range(fd, fd, 0) != 0)
		FAIL("close_range: %s", strerror(errno));
	if (!is_device(d))
		FAIL("the dup stopped being the device when the original closed");
	close(d);
	int file = mkstemp(path);
	if (file < 0)
		FAIL("mkstemp: %s", strerror(errno));
	unlink(path);
	if (write(file, "hello\n", 6) != 6)
		FAIL("a file opened at a freed device fd number (%d) is not a file", file);

	int dev = open("/dev/infiniband/uverbs0", O_RDWR);
	if (dev < 0 || !is_device(dev))
		FAIL("reopening the device failed");
	if (dup2(file, dev) != dev)
		FAIL("dup2: %s", strerror(errno));
	if (write(dev, "again\n", 6) != 6)
		FAIL("after dup2 onto the device fd, it is not the file");
	close(dev);
	close(file);
	printf("dup and close_range ok\n");
	return 0;
}
