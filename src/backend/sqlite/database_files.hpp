#pragma once
// The open path of the SQLite backend: the database's directory, the file
// and its -wal/-shm files, each checked before SQLite touches it (trust.hpp:
// whose files we trust; no symlinks; no network filesystem), made when
// missing and allowed, and the error lines that say which permission is
// missing. Also the one stat() per operation that sees the file replaced.
#include "backend/sqlite/sqlite_backend.hpp"

#include "sys/fd.hpp"

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace simba::backend::sqlite {

// strerror(), lower case ("permission denied"), for the middle of a line.
std::string errno_text(int err);

std::string dir_name(const std::string& path);

class DatabaseFiles {
public:
  // `path`: absolute (messages name it; resolved once its directory is open).
  DatabaseFiles(std::string path, const SqliteOpen& how);
  ~DatabaseFiles();
  DatabaseFiles(const DatabaseFiles&) = delete;
  DatabaseFiles& operator=(const DatabaseFiles&) = delete;

  // Opens and checks the database's directory (the default location's made
  // when missing); refuses a network filesystem. Throws UnavailableError.
  void open_directory();
  // Checks the database file (created when missing and allowed) and, in a
  // directory everyone may write, its -wal and -shm files. Throws
  // UnavailableError.
  void open_file();
  // Reopening after the file went: the directory may have gone too, and is
  // made again as a new process would (when it may create the file).
  void create_again() { m_how.create_directories = m_how.create_file; }

  // Whether the file at the path is another one than the one open_file()
  // checked, or none.
  bool replaced() const;
  // Which of the database's files we lack the permission for, as an error
  // line; empty when none (then it is another problem).
  std::string permission_problem() const;
  // Whether the -wal file holds anything.
  bool wal_has_frames() const;
  // Why the notification directory beside the database, as stat'ed without
  // following a link, is not to be trusted; empty when it is fine.
  std::string notify_distrust(const struct stat& st) const;

  const SqliteOpen& how() const { return m_how; }
  const std::string& path() const { return m_path; } // absolute, its directory resolved
  int dir_fd() const { return m_dir_fd.get(); }            // O_PATH, checked
  bool dir_setgid() const { return (m_dir_st.st_mode & S_ISGID) != 0; }
  mode_t file_mode() const { return m_file_mode; }                 // the database's permissions
  const std::string& notify_name() const { return m_notify_name; } // in the directory
  const std::string& notify_dir() const { return m_notify_dir; }   // its path, for messages

private:
  void resolve_path(const std::string& dir);
  void refuse_network_filesystem() const;
  struct stat database_file();
  void create_database_file();
  void check_links_on_the_way() const;
  void claim_wal_files(const struct stat& db);
  const gid_t* shared_gid() const { return m_group_shared ? &m_dir_st.st_gid : nullptr; }

  std::string m_path;       // absolute, its directory resolved
  std::string m_given_path; // absolute, as given
  SqliteOpen m_how;
  std::string m_base;        // the file's name in its directory
  std::string m_notify_name; // the notification directory's name there
  std::string m_notify_dir;  // its path, for messages
  sys::Fd m_dir_fd;          // the database's directory (O_PATH), checked
  struct stat m_dir_st {};
  bool m_group_shared = false; // the directory is setgid, and writable by its group (ours)
  bool m_public = false;       // everyone may write the directory (sticky)
  bool m_resolved = false;     // m_path resolved (open_directory)
  mode_t m_file_mode = 0600;   // the database's permissions
  dev_t m_dev = 0;             // the database file open_file() checked
  ino_t m_ino = 0;
};

} // namespace simba::backend::sqlite
